"""Every manifest under tests/data/invalid/ is rejected, at the paths its header names.

Header lines (docs/protocol.md "Invalid-manifest corpus format", docs/validate.md):
``# expect: <field path>`` - the path must be among the reported error paths;
``# expect-message: <text>`` - the text must appear in a reported error (for errors that
belong to the document as a whole: bad YAML, fragments). A file needs at least one.
Files are checked exactly as ``caldera validate`` checks them (decode, admit, embedded
scheduler configuration).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from federation.cli.validate import validate
from policies.codec import decode_path

CORPUS = Path(__file__).resolve().parents[1] / "data" / "invalid"
FILES = sorted(CORPUS.glob("*.yaml"))


def _expectations(path: Path) -> tuple[list[str], list[str]]:
    paths, messages = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# expect:"):
            paths.append(line.split(":", 1)[1].strip())
        elif line.startswith("# expect-message:"):
            messages.append(line.split(":", 1)[1].strip())
    return paths, messages


def test_corpus_is_large_enough() -> None:
    ours = [f for f in FILES if f.name.startswith(("karmada-", "codec-"))]
    assert len(ours) >= 15, [f.name for f in ours]


@pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
def test_invalid_manifest_is_rejected_at_expected_paths(path: Path) -> None:
    expected_paths, expected_messages = _expectations(path)
    assert expected_paths or expected_messages, f"{path.name} has no '# expect:' header"
    result = validate(decode_path(path), "default")
    assert result.errors, f"{path.name} was accepted"
    reported = [p for err in result.errors for p in err.paths]
    for expected in expected_paths:
        assert expected in reported, f"{path.name}: {expected!r} not in {reported}"
    text = "\n".join(err.describe() for err in result.errors)
    for expected in expected_messages:
        assert expected in text, f"{path.name}: {expected!r} not in:\n{text}"
    for err in result.errors:
        assert str(path) in err.describe(), "every error names its file"
