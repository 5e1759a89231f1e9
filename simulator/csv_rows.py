"""CSV trace rows with the line each came from, once the header has every column a reader needs.

Every CSV trace reader (openb's pod and node lists, Philly, ITP) reports a bad row by file, line and
column, so they all read rows through this one generator.
"""

from __future__ import annotations

import csv
from typing import Iterable, Iterator

from simulator.errors import TraceError


def csv_records(handle: Iterable[str], path: str,
                required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """``(line, record)`` for each row of ``handle``; a header without a ``required`` column is line 1's error."""
    reader = csv.DictReader(handle)
    missing = [c for c in required if c not in (reader.fieldnames or ())]
    if missing:
        raise TraceError(path, 1, missing[0], f"required column is missing (header: {reader.fieldnames})")
    for record in reader:
        yield reader.line_num, record
