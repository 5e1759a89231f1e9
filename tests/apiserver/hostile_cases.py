"""The hostile client's requests (issue 13), as data: what each sends and what kube-apiserver answers.

Shared by ``test_conformance_edges.py`` (every case must answer as listed and change nothing) and
``bench/hostile.py`` (counts 2xx / 4xx / 5xx / hangs over the same table against ``caldera serve``).
A case is a dict: ``id``, ``method``, ``path``, ``body`` (a JSON-able object, or bytes sent as is),
``type`` (Content-Type; None sends none), ``code``, ``reason``, ``field`` (a ``details.causes`` field
that must be named), ``says`` (text in the message), ``setup`` (objects POSTed first).
"""

from __future__ import annotations

import copy
from typing import Any

NS = "default"
JOBS = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{NS}/jobs"
PODGROUPS = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{NS}/podgroups"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
CONFIGMAPS = f"/api/v1/namespaces/{NS}/configmaps"

Case = dict[str, Any]


def job(name: str = "j", replicas: Any = 1, resources: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "busybox"}
    if resources is not None:
        container["resources"] = resources
    task = {"name": "w", "replicas": replicas, "template": {"spec": {"containers": [container]}}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": dict({"tasks": [task]}, **spec)}


def queue(name: str = "q", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": dict({"weight": 1}, **spec)}


def podgroup(name: str = "pg", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": name},
            "spec": dict({"minMember": 1}, **spec)}


def configmap(name: str = "cm", labels: Any = None, annotations: Any = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def _with_metadata(obj: dict[str, Any], metadata: Any) -> dict[str, Any]:
    return dict(copy.deepcopy(obj), metadata=metadata)


GPU = "nvidia.com/gpu"
TASK0 = "spec.tasks[0]"
LIMITS = f"{TASK0}.template.spec.containers[0].resources.limits[{GPU}]"
REQUESTS = f"{TASK0}.template.spec.containers[0].resources.requests[{GPU}]"


def _invalid(id_: str, path: str, body: Any, field: str, says: str = "", **extra: Any) -> Case:
    case = {"id": id_, "method": "POST", "path": path, "body": body, "code": 422, "reason": "Invalid",
            "field": field}
    if says:
        case["says"] = says
    case.update(extra)
    return case


def _bad(id_: str, method: str, path: str, says: str = "", code: int = 400, reason: str = "BadRequest",
         **extra: Any) -> Case:
    case = {"id": id_, "method": method, "path": path, "code": code, "reason": reason}
    if says:
        case["says"] = says
    case.update(extra)
    return case


BODY_CASES: list[Case] = [
    _invalid("metadata-list", QUEUES, _with_metadata(queue(), ["q"]), "metadata", "must be an object"),
    _invalid("metadata-list-job", JOBS, _with_metadata(job(), []), "metadata"),
    _invalid("metadata-string", CONFIGMAPS, _with_metadata(configmap(), "cm"), "metadata"),
    _invalid("metadata-name-number", CONFIGMAPS, _with_metadata(configmap(), {"name": 7}), "metadata.name",
             "must be a string"),
    _invalid("metadata-namespace-list", JOBS, _with_metadata(job(), {"name": "j", "namespace": ["x"]}),
             "metadata.namespace", "must be a string"),
    _invalid("replicas-int64-overflow", JOBS, job(replicas=9223372036854775808), f"{TASK0}.replicas", "INT32_MAX"),
    _invalid("replicas-beyond-int32", JOBS, job(replicas=1000000000000), f"{TASK0}.replicas", "int32"),
    _invalid("replicas-boolean", JOBS, job(replicas=True), f"{TASK0}.replicas", "boolean"),
    _invalid("replicas-string", JOBS, job(replicas="3"), f"{TASK0}.replicas", "integer"),
    _invalid("min-available-beyond-int32", JOBS, job(minAvailable=2**31), "spec.minAvailable", "int32"),
    _invalid("podgroup-min-member-beyond-int32", PODGROUPS, podgroup(minMember=2**31), "spec.minMember", "int32"),
    _invalid("queue-weight-boolean", QUEUES, queue(weight=True), "spec.weight", "boolean"),
    _invalid("gpu-1e309", JOBS, job(resources={"limits": {GPU: "1e309"}}), LIMITS, "MAX_QUANTITY"),
    _invalid("gpu-1e18", JOBS, job(resources={"limits": {GPU: "1e18"}, "requests": {GPU: "1e18"}}), LIMITS,
             "MAX_QUANTITY"),
    _invalid("gpu-30-digits", JOBS, job(resources={"limits": {GPU: "999999999999999999999999999999"}}), LIMITS,
             "MAX_QUANTITY"),
    _invalid("gpu-fraction", JOBS, job(resources={"limits": {GPU: "1.5"}}), LIMITS, "must be an integer"),
    _invalid("gpu-milli", JOBS, job(resources={"requests": {GPU: "1m"}}), REQUESTS, "must be an integer"),
    _invalid("gpu-request-below-limit", JOBS, job(resources={"limits": {GPU: 2}, "requests": {GPU: 1}}), REQUESTS,
             "must be equal to nvidia.com/gpu limit"),
    _invalid("gpu-request-without-limit", JOBS, job(resources={"requests": {GPU: 1}}), LIMITS,
             "Limit must be set for non overcommitable resources"),
    _invalid("other-extended-fraction", JOBS, job(resources={"limits": {"example.com/fpga": "0.5"}}),
             f"{TASK0}.template.spec.containers[0].resources.limits[example.com/fpga]", "must be an integer"),
    _invalid("podgroup-gpu-fraction", PODGROUPS, podgroup(minResources={GPU: "2.5"}), f"spec.minResources[{GPU}]",
             "must be an integer"),
    _invalid("cpu-beyond-milli-range", JOBS, job(resources={"requests": {"cpu": "1e17"}}),
             f"{TASK0}.template.spec.containers[0].resources.requests.cpu", "MAX_QUANTITY"),
    _invalid("queue-capability-1e309", QUEUES, queue(capability={"cpu": "1e309"}), "spec.capability.cpu",
             "MAX_QUANTITY"),
    _invalid("queue-weight-above-65535", QUEUES, queue(weight=70000), "spec.weight", "65535"),
    _invalid("label-key-invalid", CONFIGMAPS, configmap(labels={"-bad key": "v"}), "metadata.labels",
             "label key"),
    _invalid("label-key-prefix-invalid", CONFIGMAPS, configmap(labels={"Not_A_Domain/x": "v"}), "metadata.labels",
             "prefix"),
    _invalid("label-value-100-chars", CONFIGMAPS, configmap(labels={"app": "a" * 100}), "metadata.labels.app",
             "LABEL_VALUE_MAX"),
    _invalid("label-value-bad-chars", JOBS, dict(job(), metadata={"name": "j", "labels": {"app": "a b"}}),
             "metadata.labels.app", "alphanumeric"),
    _invalid("annotations-300kb", CONFIGMAPS, configmap(annotations={"big": "x" * 300_000}), "metadata.annotations",
             "TOTAL_ANNOTATION_SIZE_MAX"),
    _invalid("annotation-key-invalid", CONFIGMAPS, configmap(annotations={"a b": "v"}), "metadata.annotations",
             "annotation key"),
    _invalid("priority-class-missing", JOBS, job(priorityClassName="nope"), "spec.priorityClassName",
             "no PriorityClass with name nope"),
    _invalid("task-priority-class-missing", JOBS,
             {**job(), "spec": {"tasks": [{"name": "w", "replicas": 1, "template": {"spec": {
                 "priorityClassName": "ghost", "containers": [{"name": "c", "image": "b"}]}}}]}},
             f"{TASK0}.template.spec.priorityClassName", "ghost"),
    _invalid("podgroup-priority-class-missing", PODGROUPS, podgroup(priorityClassName="nope"),
             "spec.priorityClassName", "no PriorityClass"),
]

QUERY_CASES: list[Case] = [
    _bad("label-selector-a=b=c", "GET", f"{JOBS}?labelSelector=a%3Db%3Dc", "label selector"),
    _bad("label-selector-leading-dash", "GET", f"{JOBS}?labelSelector=-a%3Db", "key"),
    _bad("label-selector-trailing-comma", "GET", f"{JOBS}?labelSelector=a%3Db%2C", "empty term"),
    _bad("label-selector-long-value", "GET", f"{JOBS}?labelSelector=a%3D{'v' * 64}", "63"),
    _bad("field-selector-empty-segment", "GET", f"{JOBS}?fieldSelector=spec..a%3D1", "field label not supported"),
    _bad("field-selector-a=b=c", "GET", f"{JOBS}?fieldSelector=a%3Db%3Dc", "can't understand"),
    _bad("continue-garbage", "GET", f"{JOBS}?limit=1&continue=garbage", "invalid continue token"),
    _bad("continue-two-letter-json", "GET", f"{JOBS}?limit=1&continue=ImFiIg%3D%3D", "invalid continue token"),
    _bad("limit-negative", "GET", f"{JOBS}?limit=-1", "limit"),
    _bad("watch-timeout-nan", "GET", f"{JOBS}?watch=true&timeoutSeconds=nan", "timeoutSeconds"),
    _bad("watch-timeout-inf", "GET", f"{JOBS}?watch=true&timeoutSeconds=inf", "timeoutSeconds"),
    _bad("watch-timeout-1e309", "GET", f"{JOBS}?watch=true&timeoutSeconds=1e309", "timeoutSeconds"),
    _bad("watch-timeout-negative", "GET", f"{JOBS}?watch=true&timeoutSeconds=-5", "timeoutSeconds"),
    _bad("watch-timeout-fraction", "GET", f"{JOBS}?watch=true&timeoutSeconds=1.5", "timeoutSeconds"),
    _bad("dry-run-garbage", "POST", f"{QUEUES}?dryRun=garbage", "supported values: \"All\"", code=422,
         reason="Invalid", body=queue(), field="dryRun"),
    _bad("delete-propagation-bogus", "DELETE", f"{QUEUES}/q?propagationPolicy=Bogus", "Unsupported value",
         code=422, reason="Invalid", field="propagationPolicy", setup=[(QUEUES, queue())]),
    _bad("delete-body-propagation-bogus", "DELETE", f"{QUEUES}/q", "Unsupported value", code=422,
         reason="Invalid", field="propagationPolicy", body={"propagationPolicy": "Sideways"},
         setup=[(QUEUES, queue())]),
    _bad("delete-dry-run-garbage", "DELETE", f"{QUEUES}/q?dryRun=yes", "supported values", code=422,
         reason="Invalid", field="dryRun", setup=[(QUEUES, queue())]),
    _bad("put-changes-uid", "PUT", f"{QUEUES}/q", "Precondition failed: UID in precondition", code=409,
         reason="Conflict", body=_with_metadata(queue(), {"name": "q", "uid": "not-the-uid"}),
         setup=[(QUEUES, queue())]),
    _bad("post-text-plain", "POST", QUEUES, "unknown format", code=415, reason="UnsupportedMediaType",
         body=queue(), type="text/plain"),
    _bad("patch-metadata-to-list", "PATCH", f"{QUEUES}/q", "must be an object", code=422, reason="Invalid",
         field="metadata", body={"metadata": ["x"]}, type="application/merge-patch+json",
         setup=[(QUEUES, queue())]),
    _bad("json-patch-metadata-to-string", "PATCH", f"{QUEUES}/q", "must be an object", code=422,
         reason="Invalid", field="metadata", body=[{"op": "replace", "path": "/metadata", "value": "x"}],
         type="application/json-patch+json", setup=[(QUEUES, queue())]),
    # issue 42: a POST or PUT without a Content-Type is JSON (kube); a PATCH needs its patch type
    _bad("strict-unknown-field", "POST", f"{QUEUES}?fieldValidation=Strict", "strict decoding error",
         body=queue(bogus=1)),
    _bad("field-validation-bogus", "POST", f"{QUEUES}?fieldValidation=strict", "Unsupported value", code=422,
         reason="Invalid", field="fieldValidation", body=queue()),
    _bad("field-selector-unsupported-label", "GET", f"{JOBS}?fieldSelector=spec.bogus%3D1",
         "field label not supported: spec.bogus"),
    _bad("strategic-merge-patch-custom-resource", "PATCH", f"{QUEUES}/q", "unknown format", code=415,
         reason="UnsupportedMediaType", body={"spec": {"weight": 2}}, type="application/strategic-merge-patch+json",
         setup=[(QUEUES, queue())]),
    _bad("yaml-alias-bomb", "POST", CONFIGMAPS, "excessive aliasing", type="application/yaml",
         body=("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\na0: &a0 [lol, lol, lol, lol, lol]\n"
               + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9))).encode()),
    _bad("patch-without-content-type", "PATCH", f"{QUEUES}/q", "unknown format", code=415,
         reason="UnsupportedMediaType", body={"spec": {"weight": 2}}, type=None, setup=[(QUEUES, queue())]),
    _bad("oversize-body", "POST", CONFIGMAPS, "MAX_REQUEST_BODY_BYTES", code=413, reason="RequestEntityTooLarge",
         body=configmap(annotations={"a": "x" * (3 * 1024 * 1024)})),
]

#: Last, because before the fix each one blocked the server's event loop for minutes (found by fuzzing).
SLOW_PARSE_CASES: list[Case] = [
    _invalid("gpu-exponent-1e1000000000", JOBS, job(resources={"limits": {GPU: "1e1000000000"}}), LIMITS,
             "MAX_QUANTITY_EXPONENT"),
    _invalid("queue-capability-tiny-exponent", QUEUES, queue(capability={"cpu": "1e-999999999"}),
             "spec.capability.cpu", "MAX_QUANTITY_EXPONENT"),
]

CASES: list[Case] = BODY_CASES + QUERY_CASES + SLOW_PARSE_CASES
