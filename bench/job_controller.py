"""Job controller pass cost for large gang jobs (pure reconcile, no I/O).

    python bench/job_controller.py [--replicas 1000 4000] [--repeat 5]

For each size prints, in milliseconds: the pass that creates every pod (PodGroup Inqueue,
plugins env+svc+pytorch), a steady-state resync with every pod Running, and the pass that
handles one PodFailed → RestartJob (kills every pod).
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import Callable

from member_agent.controllers.job_view import view_job
from member_agent.controllers.observe import observe_pods
from member_agent.controllers.reconcile import ControllerConfig, JobObservation, reconcile
from policies.models.core import Pod
from policies.models.volcano_batch import Job
from policies.models.volcano_scheduling import PodGroup

T0 = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
CONFIG = ControllerConfig(key_source=lambda: ("PRIVATE", "ssh-rsa PUBLIC"))


def make_job(workers: int) -> Job:
    def task(name: str, replicas: int) -> dict[str, object]:
        return {"name": name, "replicas": replicas, "template": {"spec": {"containers": [
            {"name": name, "image": "pytorch", "resources": {"limits": {"nvidia.com/gpu": 8, "cpu": "64"}}}]}}}

    return Job.model_validate({
        "metadata": {"name": "big", "namespace": "ns", "uid": "u", "creationTimestamp": "2026-12-02T10:00:00Z"},
        "spec": {"minAvailable": workers + 1, "plugins": {"pytorch": ["--master=master", "--worker=worker"]},
                 "policies": [{"event": "PodFailed", "action": "RestartJob"}],
                 "tasks": [task("master", 1), task("worker", workers)]},
    })


def timed(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def running(pod: Pod) -> Pod:
    return pod.model_copy(update={"status": Pod.model_validate({"status": {"phase": "Running"}}).status})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1000, 4000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'workers':>8} {'create ms':>10} {'resync ms':>10} {'restart ms':>11} {'pods/s (create)':>16}")
    for workers in args.replicas:
        job = make_job(workers)
        first = reconcile(JobObservation(job=job), T0, CONFIG)
        assert first.pod_group is not None
        pod_group = PodGroup.model_validate({**first.pod_group.to_wire(), "status": {"phase": "Inqueue"}})
        job = job.model_copy(update={"status": first.status})
        created = reconcile(JobObservation(job=job, pod_group=pod_group), T0, CONFIG)
        create_obs = JobObservation(job=job, pod_group=pod_group)
        create_ms = timed(lambda o=create_obs: reconcile(o, T0, CONFIG), args.repeat)
        pods = [running(p) for p in created.create_pods]
        job = job.model_copy(update={"status": created.status})
        observation = JobObservation(job=job, pod_group=pod_group, pods=pods)
        resync_ms = timed(lambda o=observation: reconcile(o, T0, CONFIG), args.repeat)
        failed = list(pods)
        failed[1] = failed[1].model_copy(update={"status": Pod.model_validate({"status": {
            "phase": "Failed", "containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": 1}}}]}}).status})
        requests = observe_pods(view_job(job), pods, failed, T0 + timedelta(seconds=1))
        restart = JobObservation(job=job, pod_group=pod_group, pods=failed, requests=requests)
        restart_ms = timed(lambda o=restart: reconcile(o, T0 + timedelta(seconds=1), CONFIG), args.repeat)
        assert len(reconcile(restart, T0, CONFIG).delete_pods) == workers + 1
        print(f"{workers:>8} {create_ms:>10.1f} {resync_ms:>10.1f} {restart_ms:>11.1f} "
              f"{(workers + 1) / create_ms * 1000:>16.0f}")


if __name__ == "__main__":
    main()
