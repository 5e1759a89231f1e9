"""Bad input through the CLI: a clear error naming the object, the field and the rule; nothing changes.

Each file in ``e2e/data/bad-input/`` is one case; its ``# expect:`` lines must all appear in
``caldera apply``'s error output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.harness import DATA, api, cli
from federation.client import ResourceClient
from federation.demo.processes import System
from policies.kinds import resolve

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]
CASES = sorted((DATA / "bad-input").glob("*.yaml"))
USER_KINDS = ["jobs", "queues", "propagationpolicies", "priorityclasses", "jobflows", "jobtemplates",
              "resourcebindings", "works"]


def expectations(path: Path) -> list[str]:
    return [line.split("expect:", 1)[1].strip() for line in path.read_text().splitlines()
            if line.startswith("# expect:")]


async def user_objects(rc: ResourceClient) -> dict[tuple[str, str, str], str]:
    """(kind, namespace, name) -> resourceVersion of everything a user or the placement could write."""
    found = {}
    for kind in USER_KINDS:
        listed = await rc.list(resolve(kind))
        for item in listed.get("items") or []:
            md = item["metadata"]
            found[(kind, md.get("namespace", ""), md["name"])] = md["resourceVersion"]
    return found


def test_every_case_says_what_it_expects() -> None:
    assert len(CASES) >= 5
    for path in CASES:
        assert expectations(path), f"{path.name} has no '# expect:' line"


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
async def test_bad_manifest_is_rejected_and_changes_nothing(seed_system: System, path: Path) -> None:
    async with api(seed_system) as rc:
        before = await user_objects(rc)
        out = cli(seed_system, "apply", "-f", str(path))
        assert out.returncode != 0, out.stdout
        for text in expectations(path):
            assert text in out.stderr, f"{text!r} not in:\n{out.stderr}"
        assert " created" not in out.stdout and " configured" not in out.stdout, out.stdout
        assert await user_objects(rc) == before


async def test_unknown_kind_and_missing_file_are_clear(seed_system: System, tmp_path: Path) -> None:
    missing = cli(seed_system, "apply", "-f", str(tmp_path / "nope.yaml"))
    assert missing.returncode != 0 and "nope.yaml" in missing.stderr, missing.stderr
    unknown = cli(seed_system, "get", "widgets")
    assert unknown.returncode != 0 and 'resource type "widgets"' in unknown.stderr, unknown.stderr
