"""Fuzz ``caldera serve`` for N minutes: schemathesis over every operation of the served OpenAPI v3,
then mutated manifests of every kind, alternating, with random seeds; prints the number of requests
and the distinct failures (5xx, hangs, non-Status errors, refusals that changed the store, accepted
objects that cannot be read back, listed, watched, placed or deleted).

    python bench/fuzz.py --minutes 5
    python bench/fuzz.py --minutes 1 --examples 5    # schemathesis examples per operation per round
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.apiserver.serve_process import ServeProcess  # noqa: E402
from tests.fuzz.engine import Client, Finding, check_manifest, report  # noqa: E402
from tests.fuzz.manifests import manifests  # noqa: E402
from tests.fuzz.openapi_fuzz import fuzz_operation, group_documents, load, operations  # noqa: E402
from tests.fuzz.placing import PurePlacer  # noqa: E402


def manifest_round(client: Client, count: int, seed: int, placer: PurePlacer) -> list[Finding]:
    found: list[Finding] = []

    @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def one(data: st.DataObject) -> None:
        info, obj = data.draw(manifests())
        found.extend(check_manifest(client, info, obj, placer))

    random.seed(seed)
    one()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--examples", type=int, default=3, help="schemathesis examples per operation per round")
    parser.add_argument("--manifests", type=int, default=200, help="mutated manifests per round")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        serve = ServeProcess(Path(tmp) / "data", "--plain-http").start()
        assert serve.proc is not None and serve.proc.stdout is not None
        log = Path(tmp) / "serve.log"
        stream = serve.proc.stdout
        threading.Thread(target=lambda: log.write_text("".join(stream)), daemon=True).start()
        try:
            token = str(serve.kubeconfig_dict()["users"][0]["user"]["token"])  # type: ignore[index]
            client = Client(serve.url, token)
            started = time.monotonic()
            deadline = started + args.minutes * 60
            findings: list[Finding] = []
            placer = PurePlacer()
            schemas = [operations(load(doc)) for _name, doc in group_documents(client)]
            rounds = 0
            while time.monotonic() < deadline:
                rounds += 1
                for ops in schemas:
                    for operation in ops:
                        if time.monotonic() >= deadline:
                            break
                        findings.extend(fuzz_operation(client, operation, args.examples, derandomize=False))
                if time.monotonic() < deadline:
                    findings.extend(manifest_round(client, args.manifests, rounds, placer))
            print(f"caldera serve fuzzed for {args.minutes:g} min ({rounds} rounds)")
            print(report(findings, client.sent, started))
            return 1 if findings else 0
        finally:
            serve.stop()


if __name__ == "__main__":
    raise SystemExit(main())
