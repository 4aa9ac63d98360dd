"""A monocular depth heuristic for the offline profile (no depth weights ship in any package).

Ground-plane assumption: for objects standing on a common floor seen by an upright camera, the
lower an object's bottom edge is in the frame, the closer it is. A box's depth is therefore
``1 - y2 / H`` (0 = touching the bottom edge, 1 = at the top), nudged by apparent size (bigger
boxes are usually closer). The result is a relative ordering, not metres; it fails for objects
that do not rest on the ground (a lamp on the ceiling, a bird in the sky) and for top-down views.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from hydra_vr.api.tools import ToolContext
from hydra_vr.api.types import Box


class HeuristicDepth:
    """Options: size_weight (how much apparent size pulls an object closer, 0..1)."""

    def __init__(self, ctx: ToolContext | None = None, *, size_weight: float = 0.2) -> None:
        self.ctx = ctx or ToolContext()
        self.size_weight = size_weight

    def patch_depth(self, image: Image.Image, box: Box) -> float:
        h = max(float(image.height), 1.0)
        ground = 1.0 - min(max(box.y2 / h, 0.0), 1.0)
        size = min(box.area / max(image.width * image.height, 1.0), 1.0) ** 0.5
        return float((1 - self.size_weight) * ground + self.size_weight * (1.0 - size))

    def depth_map(self, image: Image.Image) -> np.ndarray:
        """Per-pixel version of the same assumption: rows higher in the frame are farther."""
        rows = 1.0 - (np.arange(image.height, dtype=np.float32) + 0.5) / image.height
        return np.repeat(rows[:, None], image.width, axis=1)
