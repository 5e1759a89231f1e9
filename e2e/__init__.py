"""End-to-end tests: real caldera processes on loopback, driven only through the API (docs/demo.md)."""
