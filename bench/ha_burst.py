"""kill -9 the leading ``caldera serve`` during a burst of Job creates (issue 16's 500-Job scenario).

    python bench/ha_burst.py [--jobs 500] [--seconds 2] [--lease 15s,10s,2s] [--keep DIR]

Real processes on loopback: a 3-member etcd, 3 ``caldera serve --etcd-servers ... --leader-elect``,
one sim agent per seed member cluster with ``--server`` x3 (e2e/ha_system.py). The Jobs (the seed's
``pytorch-dist-training``, 4 pods x 4 GPUs, ``--seconds`` of simulated run time) are created
concurrently, spread over the replicas; once a third are acknowledged the Lease holder is killed
with SIGKILL and creates that fail are retried on the other replicas. Prints acknowledged /
created / placed exactly once / completed, the failover time (kill -> another Lease holder), the
time until the new leader places a Job created after the kill, and whether every promise of
e2e/ha_burst.py's ``check`` held. The e2e test (e2e/test_ha.py) runs the same with 12 Jobs.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


async def run(args: argparse.Namespace, root: Path) -> int:
    from e2e.ha_burst import burst, check
    from e2e.ha_system import HA

    lease = tuple(args.lease.split(","))
    assert len(lease) == 3, "--lease wants DURATION,RENEW_DEADLINE,RETRY_PERIOD"
    ha = HA(root, lease=lease)  # type: ignore[arg-type]
    try:
        ha.start()
        figures = await burst(ha, args.jobs, seconds=args.seconds, complete_timeout=args.timeout)
    finally:
        ha.stop()
    print(f"HA burst: {args.jobs} Jobs over 3 replicas, leader killed after a third acknowledged "
          f"(lease {args.lease})")
    for line in figures.lines():
        print("  " + line)
    try:
        check(figures, ha.lease_seconds)
    except AssertionError as exc:
        print(f"  FAILED: {exc}")
        return 1
    print("  every promise held: acknowledged exist, failover and first new Work within lease+5 s, "
          "placed once, all completed")
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--seconds", type=int, default=2, help="simulated run time of each Job's pods")
    parser.add_argument("--lease", default="15s,10s,2s", help="controllers' lease duration, renew deadline, retry")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for every Job to complete")
    parser.add_argument("--keep", default="", help="run in this directory (logs kept) instead of a temp one")
    args = parser.parse_args()
    if shutil.which("etcd") is None:
        sys.exit("etcd is not installed (Debian package etcd-server)")
    if args.keep:
        Path(args.keep).mkdir(parents=True, exist_ok=True)
        sys.exit(asyncio.run(run(args, Path(args.keep))))
    with tempfile.TemporaryDirectory(prefix="caldera-ha-burst-") as tmp:
        sys.exit(asyncio.run(run(args, Path(tmp))))


if __name__ == "__main__":
    main()
