"""The comparison table on stdout: rich in a terminal, whole cells when piped.

Rich sizes a table to the console and cuts cells that do not fit with an ellipsis
(``gpu-p…``). Here no column is ever cut: cells fold onto more lines instead, and when stdout is
not a terminal (a pipe, a file, CI logs) the console is as wide as the table needs (up to
``PIPE_WIDTH``), so a piped table keeps one line per row whenever it can.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from simulator.report_view import Summary, columns_for

PIPE_WIDTH = 200
#: the columns shown on the console (the CSV and the HTML page have them all)
CONSOLE_COLUMNS = {
    "fgd": ["conf", "pods arrived", "rejected", "rejected of arrived", "GPU allocation at 100 % arrived",
            "GPU allocation at the end", "arrived load at the end", "allocation at the first rejection",
            "allocation at the first 8-GPU rejection", "wall clock"],
    "jobs": ["conf", "jobs", "finished", "unfittable", "unschedulable at the end", "JCT mean", "JCT p95",
             "queueing delay mean", "queueing delay p95", "GPU allocation (time average)", "scheduling sessions",
             "wall clock"],
}


def comparison_table(summaries: Sequence[Summary], title: str) -> Table:
    mode = "jobs" if summaries[0].get("mode") == "jobs" else "fgd"
    wanted = CONSOLE_COLUMNS[mode]
    cols = [c for c in columns_for(summaries[0]) if c.header in wanted]
    table = Table(title=title)
    for column in cols:
        table.add_column(column.header, overflow="fold", justify="left" if column.header == "conf" else "right")
    for s in summaries:
        table.add_row(*(c.display(s) for c in cols))
    return table


def print_table(table: Table, file: IO[str] | None = None) -> None:
    """Print ``table`` whole: folded rather than cut; as wide as needed when not a terminal."""
    console = Console(file=file)
    if not console.is_terminal:
        wide = Console(file=file, width=PIPE_WIDTH)
        needed = Measurement.get(wide, wide.options, table).maximum
        console = Console(file=file, width=max(80, min(PIPE_WIDTH, needed)))
    console.print(table)
