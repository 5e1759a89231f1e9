"""Bad trace input, reported with file, line and column."""

from __future__ import annotations


class TraceError(ValueError):
    def __init__(self, path: str, line: int, column: str, message: str) -> None:
        super().__init__(f"{path}:{line}: column {column}: {message}")
        self.path, self.line, self.column, self.message = path, line, column, message

    def to_json(self) -> dict[str, object]:
        return {"file": self.path, "line": self.line, "column": self.column, "message": self.message}
