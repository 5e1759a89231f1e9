"""Files only their owner may read (tokens, kubeconfigs, audit logs), created 0600 at open.

Writing first and ``chmod`` afterwards leaves a moment in which the umask's mode (often 0644)
lets anyone on the machine read a fresh token; opening with the mode closes it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

PRIVATE = 0o600


def open_append(path: Path) -> BinaryIO:
    """``path`` opened for binary appends; created 0600 when absent."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE)
    return os.fdopen(fd, "ab")


def write_text(path: Path, text: str) -> None:
    """Replace ``path``'s content with ``text``; a new file is created 0600 and an existing one made 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE)
    with os.fdopen(fd, "w") as handle:
        os.fchmod(handle.fileno(), PRIVATE)
        handle.write(text)
