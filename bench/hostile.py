"""Replay issue 13's hostile-client requests (``tests/apiserver/hostile_cases.py``) against
``caldera serve`` and count the answers: as kube-apiserver would answer (status code, reason, the field among the
causes, the rule in the message), another 4xx or another Status, 2xx
(accepted although kube refuses it), 5xx, and hangs (no answer within the client timeout).

    python bench/hostile.py                                   # starts caldera serve from this tree
    python bench/hostile.py --url http://127.0.0.1:7443 --kubeconfig DIR/admin.kubeconfig
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.apiserver.hostile_cases import CASES  # noqa: E402
from tests.apiserver.serve_process import ServeProcess  # noqa: E402
from tests.fuzz.engine import Client, Hang  # noqa: E402


def renamed(case: dict[str, Any], suffix: str) -> tuple[str, Any, list[tuple[str, Any]]]:
    """The case's path, body and setup with its object names made unique (one server for all cases)."""
    path, body = case["path"], case.get("body")
    setup = list(case.get("setup", []))
    if setup:
        path = path.replace("/q?", f"/q{suffix}?").removesuffix("/q") + (f"/q{suffix}" if path.endswith("/q") else "")
        setup = [(p, dict(o, metadata=dict(o["metadata"], name=o["metadata"]["name"] + suffix))) for p, o in setup]
        if isinstance(body, dict) and isinstance(body.get("metadata"), dict) and body["metadata"].get("name") == "q":
            body = dict(body, metadata=dict(body["metadata"], name="q" + suffix))
    elif isinstance(body, dict) and isinstance(body.get("metadata"), dict) and isinstance(
            body["metadata"].get("name"), str):
        body = dict(body, metadata=dict(body["metadata"], name=body["metadata"]["name"] + suffix))
    return path, body, setup


def classify(client: Client, case: dict[str, Any]) -> str:
    suffix = "-" + uuid.uuid4().hex[:6]
    path, body, setup = renamed(case, suffix)
    try:
        for setup_path, obj in setup:
            client.call("POST", setup_path, obj)
        status, answer = client.call(case["method"], path, body, case.get("type", "application/json"),
                                     stream="watch=true" in path)
    except Hang:
        return "hang"
    if status >= 500:
        return "5xx"
    if status < 400:
        return "2xx"
    if status != case["code"]:
        return f"other 4xx ({status} for {case['code']})"
    return "as kube" if _status_matches(answer, case) else f"other Status ({str(answer)[:160]})"


def _status_matches(answer: Any, case: dict[str, Any]) -> bool:
    """The Status names kube's reason, the case's field among its causes and the rule in its message."""
    if not isinstance(answer, dict) or answer.get("kind") != "Status" or answer.get("reason") != case["reason"]:
        return False
    causes = [c.get("field") for c in answer.get("details", {}).get("causes", [])]
    return ("field" not in case or case["field"] in causes) and case.get("says", "") in answer.get("message", "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url")
    parser.add_argument("--kubeconfig", type=Path)
    parser.add_argument("-v", "--verbose", action="store_true", help="print each case's outcome")
    args = parser.parse_args()
    serve = None
    with tempfile.TemporaryDirectory() as tmp:
        if args.url:
            config = yaml.safe_load(args.kubeconfig.read_text())
            client = Client(args.url, config["users"][0]["user"]["token"])
        else:
            serve = ServeProcess(Path(tmp) / "data", "--plain-http").start()
            assert serve.proc is not None and serve.proc.stdout is not None
            stream = serve.proc.stdout
            threading.Thread(target=lambda: [None for _ in stream], daemon=True).start()
            client = Client(serve.url, str(serve.kubeconfig_dict()["users"][0]["user"]["token"]))  # type: ignore[index]
        try:
            outcomes = Counter()
            for case in CASES:
                outcome = classify(client, case)
                outcomes[outcome.split(" (")[0]] += 1
                if args.verbose:
                    print(f"{case['id']:40} {outcome}")
            print(f"{len(CASES)} hostile requests: " + ", ".join(f"{n} {k}" for k, n in outcomes.most_common()))
        finally:
            if serve is not None:
                serve.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
