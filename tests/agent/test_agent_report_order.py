"""The agent publishes its Cluster status after a Work status that changes a share's phase.

The federation keeps deducting a share it placed until the Cluster reports capacity written after
the Work status that confirms it (federation/controllers/assumed.py); the status loop alone is
debounced, so without this the federation would wait a status period (or, when the capacity was
already reported, the 30 s heartbeat) before it could count that capacity as the report's.
"""

from __future__ import annotations

from agent_fakes import NS, Harness, job_work


def rv(obj: dict) -> int:
    return int(obj["metadata"]["resourceVersion"])


async def test_the_cluster_report_follows_the_work_status_that_confirms_a_share(harness: Harness) -> None:
    await harness.sync.publish_status()
    harness.federation.put_work(job_work("train", replicas=2, gpu=8, duration="600s"))
    await harness.run_until(lambda: harness.job_phase("train") == "Running")
    work = harness.federation.work(NS, "team.train")
    cluster = harness.federation.objects[("Cluster", "", "c1")]
    assert rv(cluster) > rv(work), "the Cluster status was written after the Work said Running"
    assert cluster["status"]["resourceSummary"]["allocated"]["nvidia.com/gpu"] == "16", cluster["status"]
    before = rv(cluster)
    await harness.step()  # nothing about the share changes: no extra Cluster write
    assert rv(harness.federation.objects[("Cluster", "", "c1")]) == before
