"""matplotlib is the ``simulate`` extra: without it ``caldera simulate`` stops before replaying
anything, with one line saying what to install (the federation and the agent never need it)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from simulator.cli import main

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "examples" / "traces"


def test_without_matplotlib_simulate_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    code = main(["--trace", str(TRACES / "openb_pod_list_default.csv"), "--nodes",
                 str(TRACES / "openb_node_list_gpu_node.csv"), "--mode", "fgd", "-o", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert "matplotlib" in err and "pip install 'caldera[simulate]'" in err
    assert not (tmp_path / "out").exists()  # nothing replayed, nothing written
