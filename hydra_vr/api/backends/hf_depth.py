"""Monocular depth from DPT / Depth Anything (transformers depth-estimation models).

These models predict relative inverse depth (disparity: larger = nearer, known only up to scale
and shift). ``depth_map`` turns it into relative depth, larger = FARTHER, at the input size:

* ``conversion: reciprocal`` (default): disparity is min-max normalised to ``[eps, 1]`` and
  inverted, ``depth = 1 / d`` in ``[1, 1/eps]``; the nearest pixel gets 1, the farthest ``1/eps``.
  It keeps depth's geometry (a far background is much farther, not just a bit) while ``eps``
  bounds the sky, whose disparity is ~0.
* ``conversion: linear``: ``depth = max(disparity) - disparity`` (0 = nearest), order-preserving.

Metric models (``depth_estimation_type: metric`` in their config) already predict metres and are
returned unchanged.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from PIL import Image

from hydra_vr.api.backends.hf_common import HubBackend
from hydra_vr.api.tools import ToolContext


def disparity_to_depth(disparity: np.ndarray, conversion: str = "reciprocal", eps: float = 0.01) -> np.ndarray:
    """Relative depth (larger = farther, float32) from relative inverse depth; see the module docstring."""
    d = np.nan_to_num(disparity.astype(np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    lo, hi = float(d.min()), float(d.max())
    if hi - lo <= 1e-12:  # flat map: no depth cue, everything equally far
        return np.ones_like(d, dtype=np.float32)
    if conversion == "linear":
        return (hi - d).astype(np.float32)
    norm = eps + (1.0 - eps) * (d - lo) / (hi - lo)
    return (1.0 / norm).astype(np.float32)


class HFDepthEstimator(HubBackend):
    """DepthEstimator over ``AutoModelForDepthEstimation`` (DPT, Depth Anything V1/V2, ...).

    Options: ``model`` (default Intel/dpt-hybrid-midas; e.g. depth-anything/Depth-Anything-V2-Small-hf),
    ``conversion`` ("reciprocal" or "linear"), ``eps`` (0.01, reciprocal floor), plus HubBackend's
    ``device``/``dtype``/``revision``/``local_files_only``.
    """

    default_model = "Intel/dpt-hybrid-midas"
    source = "dpt"
    model_class = "AutoModelForDepthEstimation"
    processor_class = "AutoImageProcessor"

    def __init__(
        self,
        ctx: ToolContext | None = None,
        *,
        conversion: Literal["reciprocal", "linear"] = "reciprocal",
        eps: float = 0.01,
        **kwargs: Any,
    ) -> None:
        super().__init__(ctx, **kwargs)
        if conversion not in ("reciprocal", "linear"):
            raise ValueError(f"conversion must be 'reciprocal' or 'linear', got {conversion!r}")
        if not 0.0 < eps < 1.0:
            raise ValueError("eps must be in (0, 1)")
        self.conversion = conversion
        self.eps = eps

    def _after_load(self) -> None:
        cfg = self._model.config
        self.metric = getattr(cfg, "depth_estimation_type", "relative") == "metric"
        self.source = cfg.model_type

    def depth_map(self, image: Image.Image) -> np.ndarray:
        """HxW float32 at ``image``'s size, larger = farther (see the module docstring for the scale)."""
        import torch

        image = image.convert("RGB")
        w, h = image.size
        inputs = self.inputs(images=image)
        with torch.inference_mode():
            outputs = self.model(**inputs)
        outputs.predicted_depth = outputs.predicted_depth.float()
        pred = self.processor.post_process_depth_estimation(outputs, target_sizes=[(h, w)])[0]["predicted_depth"]
        pred = pred.reshape(h, w).cpu().numpy()  # the processor squeezes away size-1 axes
        if self.metric:
            return np.nan_to_num(pred).astype(np.float32)
        return disparity_to_depth(pred, self.conversion, self.eps)
