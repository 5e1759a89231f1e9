"""``caldera place``: dry-run one placement from files (DESIGN.md "Stable file formats")."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

import yaml

from federation.cli.place_layouts import LayoutError, split_layouts

if TYPE_CHECKING:  # the placement core imports scipy: only `caldera place` pays for it, when it runs
    from federation.placement.decision import PlacementDecision

NAME = "place"
HELP = "dry-run the federation's placement of one Job under a PropagationPolicy on given Clusters"

POLICY_KINDS = ("PropagationPolicy", "ClusterPropagationPolicy")
CONVERTIBLE = ("VCJob", "PyTorchJob", "TFJob", "MPIJob")


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", action="append", required=True, metavar="FILE|DIR|-",
                        help="manifests: the Job, its (Cluster)PropagationPolicy and the Cluster objects or the agents' "
                             "cluster layout files (examples/clusters/*.yaml); repeatable")
    parser.add_argument("--previous", metavar="BINDING.yaml",
                        help="the job's current ResourceBinding (previous assignment, Fresh/Steady, affinity term)")
    parser.add_argument("-o", "--output", choices=["json", "table"], default="table",
                        help="json: the stable shape; table: the decision explained per cluster (default)")
    parser.add_argument("--job", metavar="NAME", help="which Job to place when the files hold several")
    parser.add_argument("--now", metavar="RFC3339", help="the time readiness is judged at (default: now)")


class InputError(Exception):
    pass


def _load(paths: list[str]) -> list[dict[str, Any]]:
    try:
        from policies.codec import admit_all, decode_paths
    except ImportError:  # codec not built: plain YAML, no validation
        docs: list[dict[str, Any]] = []
        for path in paths:
            with sys.stdin if path == "-" else open(path) as fh:
                docs.extend(d for d in yaml.safe_load_all(fh) if isinstance(d, dict))
        return docs
    result = admit_all(decode_paths(paths))
    if result.errors:
        raise InputError("\n".join(err.describe() for err in result.errors))
    from federation.placement.adapters import wire

    return [wire(item.obj) for item in result.objects]


def _policy_matches(policy: dict[str, Any], job: dict[str, Any]) -> bool:
    meta = job.get("metadata") or {}
    for sel in (policy.get("spec") or {}).get("resourceSelectors") or []:
        if sel.get("kind") != "Job" or not str(sel.get("apiVersion", "")).startswith("batch.volcano.sh/"):
            continue
        if sel.get("name") and sel["name"] != meta.get("name"):
            continue
        if sel.get("namespace") and policy.get("kind") == "PropagationPolicy" and \
                sel["namespace"] != (meta.get("namespace") or "default"):
            continue
        if not sel.get("name") and sel.get("labelSelector"):
            want = (sel["labelSelector"] or {}).get("matchLabels") or {}
            have = meta.get("labels") or {}
            if any(have.get(k) != v for k, v in want.items()):
                continue
        return True
    return False


def _pick(docs: list[dict[str, Any]], job_name: str | None) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    kinds = [d.get("kind") for d in docs]
    convertible = [k for k in kinds if k in CONVERTIBLE]
    jobs = [d for d in docs if d.get("kind") == "Job" and str(d.get("apiVersion", "")).startswith("batch.volcano.sh/")]
    if job_name:
        jobs = [j for j in jobs if (j.get("metadata") or {}).get("name") == job_name]
    if not jobs:
        extra = f" ({', '.join(convertible)} must be converted to a Job first)" if convertible else ""
        raise InputError(f"no batch.volcano.sh Job{' named ' + job_name if job_name else ''} in the files{extra}")
    if len(jobs) > 1:
        names = ", ".join((j.get("metadata") or {}).get("name", "?") for j in jobs)
        raise InputError(f"{len(jobs)} Jobs in the files ({names}): choose one with --job")
    job = jobs[0]
    policies = [d for d in docs if d.get("kind") in POLICY_KINDS]
    if not policies:
        raise InputError("no PropagationPolicy or ClusterPropagationPolicy in the files")
    matching = [p for p in policies if _policy_matches(p, job)]
    if not matching:
        names = ", ".join((p.get("metadata") or {}).get("name", "?") for p in policies)
        raise InputError(f"no policy's resourceSelectors select Job {(job.get('metadata') or {}).get('name')} ({names})")
    # PropagationPolicy before ClusterPropagationPolicy, then priority, then name (Karmada's order)
    matching.sort(key=lambda p: (p.get("kind") != "PropagationPolicy",
                                 -int((p.get("spec") or {}).get("priority") or 0),
                                 (p.get("metadata") or {}).get("name", "")))
    clusters = [d for d in docs if d.get("kind") == "Cluster"]
    if not clusters:
        raise InputError("no Cluster objects or cluster layout files (examples/clusters/*.yaml) in the files")
    names = [(c.get("metadata") or {}).get("name") for c in clusters]
    twice = sorted({str(n) for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"Cluster {', '.join(twice)} given more than once (as a Cluster object or a cluster layout file)")
    return job, matching[0], clusters


def run(args: argparse.Namespace) -> int:
    try:
        manifests, layout_clusters = split_layouts(args.filename)
        docs = (_load(manifests) if manifests else []) + layout_clusters
        job, policy, clusters = _pick(docs, args.job)
        previous = None
        if args.previous:
            bindings = [d for d in _load([args.previous]) if d.get("kind") in ("ResourceBinding", "ClusterResourceBinding")]
            if len(bindings) != 1:
                raise InputError(f"{args.previous}: expected one ResourceBinding, found {len(bindings)}")
            previous = bindings[0]
        from federation.placement.adapters import build_request, timestamp

        now = timestamp(args.now) if args.now else time.time()
        request = build_request(job, policy, clusters, previous, now=now or 0.0)
    except (InputError, LayoutError, OSError) as err:
        print(f"caldera place: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # ValidationFailed and friends carry the object and field path
        print(f"caldera place: {err}", file=sys.stderr)
        return 2
    from federation.placement.place import place

    decision = place(request)
    if args.output == "json":
        if decision.ok:
            print(json.dumps(decision.to_stable_json(), indent=2, ensure_ascii=False))
        else:
            assert decision.failure is not None
            print(json.dumps({"error": f"job {decision.job} is unschedulable: {decision.failure.reason}",
                              "step": decision.failure.step, "condition": decision.failure.condition,
                              "strategy": decision.strategy,
                              "clusters": {n: d.infeasible or d.reason for n, d in sorted(decision.diagnosis.items())
                                           if d.infeasible or d.reason}}, indent=2, ensure_ascii=False))
    else:
        print(render_table(decision, (policy.get("metadata") or {}).get("name", "")))
    if not decision.ok:
        assert decision.failure is not None
        print(f"caldera place: job {decision.job} is unschedulable at step {decision.failure.step} "
              f"({decision.failure.condition}): {decision.failure.reason}", file=sys.stderr)
        return 1
    return 0


def render_table(decision: "PlacementDecision", policy: str) -> str:
    from federation.placement.place import fmt_split

    lines = [f"job {decision.job}   policy {policy}   strategy {decision.strategy}"
             + (f"   affinity {decision.affinity_name}" if decision.affinity_name else "")]
    header = ("CLUSTER", "VERDICT", "WEIGHT", "CAPACITY", "KARMADA", "PLACED", "TASKS (replicas/min @offset)", "WHY")
    rows = [header]
    for name, d in sorted(decision.diagnosis.items()):
        share = decision.shares.get(name)
        capacity = "-" if d.estimate is None else f"{d.estimate} ({d.estimate_kind})"
        if len(d.task_estimates) > 1:
            capacity += " [" + " ".join(f"{t}:{e}" for t, e in d.task_estimates.items()) + "]"
        tasks = " ".join(f"{t}={ts.replicas}/{ts.min_available}@{ts.offset}" for t, ts in share.tasks.items()) if share else ""
        why = d.infeasible and f"Karmada's share does not fit: {d.infeasible}" or d.reason
        rows.append((name, d.verdict, "-" if d.weight is None else f"{d.weight:g}", capacity,
                     "-" if d.karmada is None else str(d.karmada), str(share.replicas) if share else "0", tasks, why))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=False)) + "  " + r[-1])
    if decision.karmada_split:
        lines.append(f"Karmada's split: {fmt_split(decision.karmada_split)}")
    lines.append(f"path: {decision.path}" + (f"   optimizer: {decision.optimizer}" if decision.optimizer else ""))
    lines.append(f"reason: {decision.reason}")
    return "\n".join(lines)
