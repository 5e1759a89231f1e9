"""``caldera validate`` end to end through federation.cli.main: output formats, exit status,
warnings vs errors, embedded scheduler configurations."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from federation.cli import build_parser, main
from policies.codec import decode_text

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "tests" / "data" / "seed"
POLICY = (SEED / "propagationpolicy-volcano-job-policy.yaml").read_text(encoding="utf-8")
CONFIGMAP = (SEED / "configmap-volcano-scheduler-config.yaml").read_text(encoding="utf-8")


def run(argv: list[str], capsys: pytest.CaptureFixture[str], stdin: str | None = None,
        monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        assert monkeypatch is not None
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(["validate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_help_explains_exit_status_and_foreign_kinds() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    text = sub.choices["validate"].format_help()  # type: ignore[attr-defined]
    assert "not a Caldera kind" in text and "Exit status" in text


def test_json_output_of_several_objects_is_a_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["-f", str(SEED / "queue-ai-training.yaml"), "-f", str(SEED / "queue-inference.yaml"),
                        "-o", "json"], capsys)
    assert code == 0
    body = json.loads(out)
    assert body["kind"] == "List"
    assert [i["metadata"]["name"] for i in body["items"]] == ["ai-training", "inference"]


def test_yaml_output_is_defaulted_and_decodes_again(capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = run(["-f", "-", "-o", "yaml", "-n", "team-a"], capsys, POLICY, monkeypatch)
    assert code == 0
    [item] = decode_text(out).objects
    assert item.obj.metadata.namespace == "team-a"
    assert "schedulerName: default-scheduler" in out


def test_quiet_prints_nothing_for_valid_input(capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    assert run(["-f", "-", "-q"], capsys, POLICY, monkeypatch) == (0, "", "")


def test_valid_objects_are_printed_even_when_others_fail(capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    bad = POLICY.replace("name: volcano-job-policy", "name: bad").replace("weight: 1", "weight: 0")
    code, out, err = run(["-f", "-"], capsys, f"{POLICY}---\n{bad}", monkeypatch)
    assert code == 1
    assert out == "propagationpolicy.policy.karmada.io/volcano-job-policy\n"
    assert "PropagationPolicy default/bad is invalid" in err
    assert "1 of 2 documents invalid" in err


def test_only_foreign_kinds_exit_zero(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(["-f", "-"], capsys, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n",
                         monkeypatch)
    assert (code, out) == (0, "")
    assert "Deployment (apps/v1) is not a Caldera kind, skipped" in err


def test_nothing_found_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["-f", str(tmp_path)], capsys)
    assert code == 1 and "no objects found" in err


def test_scheduler_configmap_is_checked(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("policies.scheduler_conf")
    assert run(["-f", "-"], capsys, CONFIGMAP, monkeypatch)[0] == 0
    # an unknown plugin is skipped, as vc-scheduler skips it: accepted with a warning naming it
    skipped = CONFIGMAP.replace("name: conformance", "name: no-such-plugin")
    code, out, err = run(["-f", "-"], capsys, skipped, monkeypatch)
    assert code == 0 and out != ""
    assert "warning:" in err and "data[volcano-scheduler.conf]" in err and "no-such-plugin" in err
    # an unknown action makes vc-scheduler refuse the whole file
    broken = CONFIGMAP.replace('actions: "', 'actions: "no-such-action, ')
    code, out, err = run(["-f", "-"], capsys, broken, monkeypatch)
    assert code == 1 and out == ""
    assert "data[volcano-scheduler.conf]" in err and "no-such-action" in err


def test_scheduler_conf_fragment_gets_a_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("policies.scheduler_conf")
    code, _, err = run(["-f", str(SEED / "foreign" / "fragment-scheduler-conf-drf.yaml")], capsys)
    assert code == 1
    assert "fragment, not a Kubernetes object" in err
    assert "on its own is a valid scheduler configuration" in err


def test_kube_scheduler_configmap_is_accepted_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["-f", str(SEED / "foreign" / "configmap-kube-scheduler-config.yaml")], capsys)
    assert code == 0 and out == "configmap/volcano-scheduler-config\n"
    assert "KubeSchedulerConfiguration" in err and "not a Caldera kind, skipped" in err
