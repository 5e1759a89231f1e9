"""Typed views of wire objects (policies/k8s/object_view.py): the same mapping, typed; absent parts read as empty."""

from __future__ import annotations

from policies.k8s.object_view import NO_META, conditions_of, meta_of, object_view

CASES = [
    # (object, expected metadata name, expected namespace)
    ({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}, "p", "ns"),
    ({"kind": "Node", "metadata": {"name": "n"}}, "n", None),
    ({"kind": "Pod"}, None, None),
    ({"kind": "Pod", "metadata": None}, None, None),
]


def test_meta_of_reads_the_objects_own_metadata_or_an_empty_view() -> None:
    for obj, name, namespace in CASES:
        meta = meta_of(obj)
        assert meta.get("name") == name, obj
        assert meta.get("namespace") == namespace, obj
        if obj.get("metadata"):
            assert meta is obj["metadata"]  # a view, not a copy
        else:
            assert meta is NO_META and not NO_META


def test_object_view_is_the_mapping_itself_and_conditions_default_to_empty() -> None:
    obj = {"kind": "Cluster", "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    view = object_view(obj)
    assert view is obj
    assert [c.get("type") for c in conditions_of(view["status"])] == ["Ready"]
    assert conditions_of({}) == []
