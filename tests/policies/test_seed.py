"""The seed's manifests (tests/data/seed/) are accepted by ``caldera validate`` as written;
other systems' blocks (tests/data/seed/foreign/) get a clear message, never a crash."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from federation.cli import main
from policies.codec import decode_path, decode_text, dump

REPO = Path(__file__).resolve().parents[2]
SEED_DIR = REPO / "tests" / "data" / "seed"
FOREIGN_DIR = SEED_DIR / "foreign"
SEED_TEXT = SEED_DIR / "000_592ac98742f11b8c.txt"  # the seed document, verbatim
SEED_FILES = sorted(SEED_DIR.glob("*.yaml"))
FOREIGN_FILES = sorted(FOREIGN_DIR.glob("*.yaml"))
FRAGMENTS = [f for f in FOREIGN_FILES if f.name.startswith("fragment-")]
NOT_OURS = [f for f in FOREIGN_FILES if not f.name.startswith("fragment-")]


def test_every_seed_kind_has_a_file() -> None:
    kinds = {item.obj.kind for f in SEED_FILES for item in decode_path(f).objects}
    assert {"PodGroup", "Queue", "Job", "VCJob", "PyTorchJob", "JobFlow", "PropagationPolicy",
            "PriorityClass", "ConfigMap"} <= kinds
    assert len(SEED_FILES) >= 23


@pytest.mark.parametrize("path", SEED_FILES + FOREIGN_FILES, ids=lambda p: p.name)
def test_seed_file_is_written_as_in_the_seed(path: Path) -> None:
    seed = "\n".join(line.rstrip() for line in SEED_TEXT.read_text(encoding="utf-8").splitlines())
    body = "\n".join(line.rstrip() for line in path.read_text(encoding="utf-8").splitlines())
    assert body in seed


def test_model_tests_blocks_are_written_as_in_the_seed() -> None:
    from volcano_seed_blocks import SEED_BLOCKS

    seed = "\n".join(line.rstrip() for line in SEED_TEXT.read_text(encoding="utf-8").splitlines())
    missing = [key for key, block in SEED_BLOCKS.items()
               if "\n".join(line.rstrip() for line in block.splitlines()) not in seed]
    assert not missing


@pytest.mark.parametrize("path", SEED_FILES, ids=lambda p: p.name)
def test_seed_file_validates(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-f", str(path), "-o", "yaml"]) == 0
    out, err = capsys.readouterr()
    assert "error" not in err
    printed = decode_text(out, "<stdout>")
    assert printed.ok and len(printed.objects) == len(decode_path(path).objects) >= 1


@pytest.mark.parametrize("path", SEED_FILES, ids=lambda p: p.name)
def test_seed_file_round_trips(path: Path) -> None:
    first = decode_path(path)
    assert first.ok, [e.describe() for e in first.errors]
    again = decode_text(dump([d.obj for d in first.objects]), "<dump>")
    assert [d.obj for d in again.objects] == [d.obj for d in first.objects]


@pytest.mark.parametrize("path", NOT_OURS, ids=lambda p: p.name)
def test_foreign_kind_is_skipped_with_a_warning(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-f", str(path)]) == 0
    err = capsys.readouterr().err
    assert "is not a Caldera kind, skipped" in err
    assert str(path) in err


@pytest.mark.parametrize("path", FRAGMENTS, ids=lambda p: p.name)
def test_fragment_is_reported_as_not_an_object(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-f", str(path)]) == 1
    err = capsys.readouterr().err
    assert "fragment, not a Kubernetes object" in err
    assert "it looks like" in err


def test_examples_directory_validates(capsys: pytest.CaptureFixture[str]) -> None:
    # the README's demo command; examples/ may also hold agent sim files (skipped with a warning)
    assert main(["validate", "-f", str(REPO / "examples")]) == 0
    out = capsys.readouterr().out
    assert "propagationpolicy.policy.karmada.io/volcano-job-policy" in out.splitlines()


def test_validate_in_a_subprocess_reads_stdin() -> None:
    text = (SEED_DIR / "propagationpolicy-volcano-job-policy.yaml").read_text(encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "federation", "validate", "-f", "-", "-o", "json"],
                          input=text, capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert '"replicaDivisionPreference": "Weighted"' in proc.stdout
    assert '"namespace": "default"' in proc.stdout  # defaulted resource selector namespace
    bad = text.replace("weight: 2", "weight: 0")
    proc = subprocess.run([sys.executable, "-m", "federation", "validate", "-f", "-"],
                          input=bad, capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
    assert proc.returncode == 1
    line = bad.splitlines().index("            weight: 0") + 1
    assert f"staticWeightList[1].weight (line {line})" in proc.stderr


def test_examples_are_copies_of_the_seed_files() -> None:
    examples = {p.name: p.read_text(encoding="utf-8") for p in (REPO / "examples" / "seed").glob("*.yaml")}
    assert examples == {p.name: p.read_text(encoding="utf-8") for p in SEED_FILES}
