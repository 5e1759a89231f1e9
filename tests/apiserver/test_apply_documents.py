"""``caldera apply``'s offline step: dependency order, and documents that cannot be applied."""

from __future__ import annotations

from pathlib import Path

from federation.cli.apply import load_documents

SEED = Path(__file__).resolve().parents[1] / "data" / "seed"


def test_directory_is_applied_in_dependency_order(tmp_path: Path) -> None:
    # file names sort the Job before its Queue and PriorityClass, as in the seed directory
    (tmp_path / "a-job.yaml").write_text((SEED / "job-gpu-dist-training.yaml").read_text())
    (tmp_path / "b-policy.yaml").write_text((SEED / "propagationpolicy-volcano-job-policy.yaml").read_text())
    (tmp_path / "c-priority.yaml").write_text((SEED / "priorityclass-high-priority.yaml").read_text())
    (tmp_path / "d-queue.yaml").write_text((SEED / "queue-ai-training.yaml").read_text())
    manifests, errors = load_documents([str(tmp_path)])
    assert errors == []
    kinds = [m["kind"] for m in manifests]
    assert kinds == ["PriorityClass", "Queue", "PropagationPolicy", "Job"]


def test_a_document_without_a_name_stops_the_whole_apply(tmp_path: Path) -> None:
    (tmp_path / "queue.yaml").write_text((SEED / "queue-ai-training.yaml").read_text())
    fragment = tmp_path / "fragment.yaml"
    fragment.write_text("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nspec:\n  queue: ai-training\n"
                        "  tasks:\n  - replicas: 1\n    template:\n      spec:\n        containers:\n"
                        "        - name: c\n          image: busybox\n")
    manifests, errors = load_documents([str(tmp_path)])
    assert len(errors) == 1
    assert "fragment.yaml" in errors[0] and "Job" in errors[0] and "metadata.name: required" in errors[0]
