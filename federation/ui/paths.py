"""Which dashboard paths skip the API server's token check (no imports: the server's middleware reads it).

The page answers 401 itself when it gets no valid token, and its static files hold no data. The
JSON documents under ``/ui/api/`` are not listed: they are authenticated like every API path.
"""

from __future__ import annotations

PAGE_PATHS = ("/ui", "/ui/")
JOB_PAGE_PREFIX = "/ui/jobs/"
STATIC_PREFIX = "/ui/static/"


def is_public(path: str) -> bool:
    return path in PAGE_PATHS or path.startswith((JOB_PAGE_PREFIX, STATIC_PREFIX))
