"""The ImageLocality score nodeorder adds with ``imagelocality.weight`` (volcano.md §6.8).

kube-scheduler's scorer, which Volcano's nodeorder runs per node (raw score times the weight,
no normalisation): for each image of the pod (init containers and containers; a name without
a tag gets ``:latest``) that a node lists in ``status.images``, the image's size scaled by the
share of all nodes that have it; the sum, clamped to [23 MiB, 1000 MiB x containers], maps
linearly onto 0..100. Nodes without any of the images score 0.
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping

import numpy as np

MIB = 1024 * 1024
MIN_THRESHOLD = 23 * MIB
MAX_CONTAINER_THRESHOLD = 1000 * MIB
MAX = 100


def normalized_image_name(name: str) -> str:
    """kube's ``normalizedImageName``: no tag after the last ``/`` means ``:latest``."""
    return name if name.rfind(":") > name.rfind("/") else name + ":latest"


class ImageLocality:
    def __init__(self, images: tuple[Mapping[str, int], ...], listed: bool | None = None) -> None:
        """``listed``: whether any node lists an image, when known (``NodeTable.lists_images``)."""
        self.images = images
        listed = any(images) if listed is None else listed
        # nodes per image (most clusters list none)
        self.spread: Counter[str] = Counter(name for node in images for name in node) if listed else Counter()
        self.active = bool(self.spread)
        self.by_images: dict[tuple[str, ...], np.ndarray] = {}

    def scores(self, pod_images: tuple[str, ...]) -> np.ndarray:
        """Per node row (all rows), the 0..100 score for a pod with ``pod_images``."""
        cached = self.by_images.get(pod_images)
        if cached is not None:
            return cached
        total = len(self.images)
        names = [normalized_image_name(i) for i in pod_images]
        out = np.zeros(total)
        if names and total:
            high = MAX_CONTAINER_THRESHOLD * len(names)
            for row, node in enumerate(self.images):
                summed = sum(int(node[n] * (self.spread[n] / total)) for n in names if n in node)
                clamped = min(max(summed, MIN_THRESHOLD), high)
                out[row] = MAX * (clamped - MIN_THRESHOLD) // (high - MIN_THRESHOLD)
        self.by_images[pod_images] = out
        return out
