"""Which reader a trace file needs: ``*.jsonl`` is the Caldera format (:mod:`simulator.caldera_trace`),
``*.tar.gz[#member]`` an ITP cluster csv inside the ElasticFlow tarball, a csv with a ``num_gpus`` and
``cluster`` header Philly (:mod:`simulator.csv_traces`)."""

from __future__ import annotations

import os

from simulator import caldera_trace, csv_traces
from simulator.errors import TraceError
from simulator.trace import Trace


def read_trace(path: str, *, skip_bad: bool = False, gpus_per_pod: int = 8, cpu_per_gpu: str = "4",
               memory_per_gpu: str = "16Gi") -> Trace:
    """The jobs of ``path`` sorted by arrival (then by row), any supported format."""
    file, _, member = path.partition("#")
    if file.endswith(".jsonl"):
        trace = caldera_trace.read_jsonl(file, skip_bad=skip_bad)
    elif file.endswith((".tar.gz", ".tgz", ".tar")):
        trace = csv_traces.read_itp(file, member, skip_bad=skip_bad, gpus_per_pod=gpus_per_pod,
                                    cpu_per_gpu=cpu_per_gpu, memory_per_gpu=memory_per_gpu)
    elif file.endswith(".csv"):
        trace = csv_traces.read_csv_trace(file, skip_bad=skip_bad, gpus_per_pod=gpus_per_pod,
                                          cpu_per_gpu=cpu_per_gpu, memory_per_gpu=memory_per_gpu)
    else:
        raise TraceError(path, 0, "-", f"unknown trace format {os.path.splitext(file)[1]!r} "
                         "(want .jsonl, .csv, or .tar.gz[#member])")
    trace.jobs.sort(key=lambda j: j.arrival)  # stable: rows of one second keep their order
    return trace
