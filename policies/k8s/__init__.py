"""Kubernetes' own semantics, each written once: label and node selectors, taints and
tolerations, Go durations and JSON/merge patches (one module per concept, one table of cases per
module in ``tests/policies/k8s``). Pure: no I/O, no clock, nothing from ``federation`` or
``member_agent``; both planes import these instead of keeping copies."""
