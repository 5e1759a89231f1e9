"""The federation's web dashboard at ``/ui`` (docs/dashboard.md): static HTML/JS/CSS, no build step.

``federation.ui.routes.add_routes`` mounts it next to ``GET /status``;
``federation.ui.paths.is_public`` names the paths the API server's token check lets through.
"""
