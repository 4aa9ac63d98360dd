"""Shared loading for the hub-profile backends (transformers models from a hub id or a local dir).

Every hub backend derives from :class:`HubBackend`: it takes ``model`` (a hub id such as
``google/owlv2-base-patch16-ensemble`` or a directory written by ``save_pretrained``), picks the
device (``device`` option, else ``ctx.torch_device()``) and dtype (``dtype: auto`` is float16 on
CUDA and float32 elsewhere), and loads model + processor once, lazily, on first use or ``load()``.

Offline use: with ``HF_HUB_OFFLINE=1`` (or ``TRANSFORMERS_OFFLINE=1``), or when ``model`` is a
local directory, files are read with ``local_files_only=True`` so nothing touches the network.
Weights that cannot be had raise :class:`ModelLoadError` naming the model id and what is needed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from hydra_vr.api.tools import ToolContext
from hydra_vr.api.toolbox import ToolUnavailableError
from hydra_vr.api.types import Box, Detection

_TRUTHY = {"1", "true", "yes", "on"}
_DTYPES = {
    **dict.fromkeys(("float16", "fp16", "half"), "float16"),
    **dict.fromkeys(("bfloat16", "bf16"), "bfloat16"),
    **dict.fromkeys(("float32", "fp32", "float"), "float32"),
}


class ModelLoadError(ToolUnavailableError):
    """A hub model's weights (or processor files) could not be loaded."""


def hub_offline() -> bool:
    """Whether the environment forbids hub access (the variables huggingface_hub honours)."""
    return any(os.environ.get(v, "").strip().lower() in _TRUTHY for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def _looks_like_path(model_id: str) -> bool:
    # Hub ids are "name" or "org/name"; anything else that names the file system is a path.
    return model_id.startswith((".", "/", "~")) or model_id.count("/") > 1 or (os.sep != "/" and os.sep in model_id)


def resolve_dtype(device: str, dtype: str | None) -> Any:
    """``auto``/None -> float16 on CUDA (halves memory; set float32 if a model misbehaves), float32 elsewhere."""
    import torch

    if dtype is None or dtype == "auto":
        return torch.float16 if device.startswith("cuda") else torch.float32
    try:
        return getattr(torch, _DTYPES[dtype.lower()])
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}; use auto, {', '.join(sorted(set(_DTYPES.values())))}") from None


def from_pretrained(
    loader: Any, model_id: str, *, what: str, local_files_only: bool | None = None, **kwargs: Any
) -> Any:
    """``loader.from_pretrained(model_id)`` reading only local files when offline or given a directory.

    ``loader`` is a transformers class (``AutoProcessor``, ``Owlv2ForObjectDetection``...). Failures
    become ModelLoadError saying which model and that hub access or a local path is needed.
    """
    path = Path(model_id).expanduser()
    is_dir = path.is_dir()
    if not is_dir and _looks_like_path(model_id):
        raise ModelLoadError(
            f"cannot load {what} {model_id!r}: no such local directory; give a directory written by "
            "save_pretrained or a model hub id (which needs hub access or a cached copy)"
        )
    if local_files_only is None:
        local_files_only = is_dir or hub_offline()
    source = str(path) if is_dir else model_id
    try:
        return loader.from_pretrained(source, local_files_only=local_files_only, **kwargs)
    except (OSError, ValueError) as exc:  # transformers/huggingface_hub report missing files as these
        if is_dir:
            raise ModelLoadError(f"cannot load {what} from local directory {source!r}: {exc}") from exc
        how = "hub access is off (HF_HUB_OFFLINE) and it is not in the local cache" if local_files_only else (
            "the model hub could not be reached or has no such model"
        )
        raise ModelLoadError(
            f"cannot load {what} {model_id!r}: {how}. It needs model-hub access (huggingface.co) to download "
            f"it once, or set the backend's `model` option to a local directory saved with save_pretrained. "
            f"Cause: {type(exc).__name__}: {exc}"
        ) from exc


def to_device(batch: Mapping[str, Any], device: str, dtype: Any) -> dict[str, Any]:
    """Tensors of ``batch`` on ``device``; floating ones (pixels) cast to the model dtype, ids left alone."""
    out: dict[str, Any] = {}
    for key, value in batch.items():
        if hasattr(value, "to") and hasattr(value, "is_floating_point"):
            value = value.to(device=device, dtype=dtype) if value.is_floating_point() else value.to(device)
        out[key] = value
    return out


class HubBackend:
    """Base of the transformers backends: options, device/dtype, one lazy thread-safe load.

    Subclasses set ``default_model``, ``source`` (the name results carry) and the transformers
    class names ``model_class`` / ``processor_class``, resolved from ``transformers`` at load time.
    """

    default_model: ClassVar[str] = ""
    source: str = "hub"  # the name results carry; may be refined once the config is loaded
    model_class: ClassVar[str] = "AutoModel"
    processor_class: ClassVar[str] = "AutoProcessor"

    def __init__(
        self,
        ctx: ToolContext | None = None,
        *,
        model: str | None = None,
        device: str | None = None,
        dtype: str | None = "auto",
        revision: str | None = None,
        local_files_only: bool | None = None,
        hub_cache_dir: str | None = None,
    ) -> None:
        self.ctx = ctx or ToolContext()
        self.model_id = model or self.default_model
        if not self.model_id:
            raise ValueError(f"{type(self).__name__} needs a `model` option (a hub id or a local directory)")
        self.device = device or self.ctx.torch_device()
        self.dtype_name = dtype
        self._load_kwargs: dict[str, Any] = {"local_files_only": local_files_only}
        if revision:
            self._load_kwargs["revision"] = revision
        if hub_cache_dir:
            self._load_kwargs["cache_dir"] = str(Path(hub_cache_dir).expanduser())
        self._lock = threading.Lock()
        self.dtype: Any = None  # a torch.dtype once loaded
        self._model: Any = None
        self._processor: Any = None

    # ------------------------------------------------------------------ loading
    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> HubBackend:
        """Load model and processor once (later calls return at once)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    import transformers

                    self.dtype = resolve_dtype(self.device, self.dtype_name)
                    processor = self._from_pretrained(getattr(transformers, self.processor_class), "processor")
                    model = self._from_pretrained(getattr(transformers, self.model_class), "model", dtype=self.dtype)
                    model.to(self.device).eval()
                    self._processor = processor
                    self._model = model
                    self._after_load()
        return self

    def _from_pretrained(self, loader: Any, part: str, **kwargs: Any) -> Any:
        return from_pretrained(loader, self.model_id, what=f"{self.source} {part}", **self._load_kwargs, **kwargs)

    def _after_load(self) -> None:
        """Hook for subclasses that derive settings from the loaded config."""

    @property
    def model(self) -> Any:
        return self.load()._model

    @property
    def processor(self) -> Any:
        return self.load()._processor

    def inputs(self, **processor_args: Any) -> dict[str, Any]:
        """Run the processor (PyTorch tensors) and move the result to the model's device and dtype."""
        batch = self.processor(return_tensors="pt", **processor_args)
        return to_device(batch, self.device, self.dtype)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model_id!r}, device={self.device!r})"


class GenerativeVQA(HubBackend):
    """Shared greedy generation for the VQA models: short answers, prompt tokens stripped."""

    def __init__(self, ctx: ToolContext | None = None, *, max_new_tokens: int = 10, **kwargs: Any) -> None:
        super().__init__(ctx, **kwargs)
        if max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")
        self.max_new_tokens = max_new_tokens

    def generate_text(self, max_new_tokens: int | None = None, **processor_args: Any) -> str:
        import torch

        inputs = self.inputs(**processor_args)
        with torch.inference_mode():
            out = self.model.generate(
                **inputs, max_new_tokens=max_new_tokens or self.max_new_tokens, do_sample=False, num_beams=1
            )
        prompt = inputs.get("input_ids")
        # Decoder-only language models echo the prompt before the new tokens.
        if prompt is not None and out.shape[1] >= prompt.shape[1] and torch.equal(out[:, : prompt.shape[1]], prompt):
            out = out[:, prompt.shape[1] :]
        return self.processor.batch_decode(out, skip_special_tokens=True)[0].strip()


class HubDetector(HubBackend):
    """Shared options of the open-vocabulary detectors: score threshold, per-query NMS, a cap.

    ``threshold`` / ``nms_iou`` default to the subclass's ``default_threshold`` / ``default_nms_iou``;
    ``nms_iou >= 1`` disables NMS; ``max_detections`` caps the result (best first).
    """

    default_threshold: ClassVar[float] = 0.1
    default_nms_iou: ClassVar[float] = 0.3
    model_class: ClassVar[str] = "AutoModelForZeroShotObjectDetection"

    def __init__(
        self,
        ctx: ToolContext | None = None,
        *,
        threshold: float | None = None,
        nms_iou: float | None = None,
        max_detections: int = 100,
        **kwargs: Any,
    ) -> None:
        super().__init__(ctx, **kwargs)
        self.threshold = self.default_threshold if threshold is None else threshold
        self.nms_iou = self.default_nms_iou if nms_iou is None else nms_iou
        if max_detections < 1:
            raise ValueError("max_detections must be >= 1")
        self.max_detections = max_detections

    def run(self, **processor_args: Any) -> Any:
        """One forward pass; logits and boxes in float32 for the post-processing."""
        import torch

        with torch.inference_mode():
            outputs = self.model(**self.inputs(**processor_args))
        outputs.logits = outputs.logits.float()
        outputs.pred_boxes = outputs.pred_boxes.float()
        return outputs

    def to_detections(
        self, boxes: Any, scores: Any, query_idx: Any, queries: Sequence[str], image: Any
    ) -> list[Detection]:
        return detections_from_boxes(
            boxes, scores, query_idx, queries, image.size,
            source=self.source, nms_iou=self.nms_iou, max_detections=self.max_detections,
        )


def clean_answer(text: str) -> str:
    """One line, no trailing full stop: answers are compared as short strings downstream."""
    return " ".join(text.split()).rstrip(".").strip()


def clean_queries(queries: Sequence[str]) -> list[str]:
    """Non-empty, stripped, de-duplicated query texts in their given order."""
    if isinstance(queries, str):
        raise TypeError("queries must be a sequence of strings, not one string")
    return list(dict.fromkeys(q.strip() for q in queries if isinstance(q, str) and q.strip()))


def detections_from_boxes(
    boxes: Any,
    scores: Any,
    query_idx: Any,
    queries: Sequence[str],
    image_size: tuple[int, int],
    *,
    source: str,
    nms_iou: float,
    max_detections: int,
) -> list[Detection]:
    """Detections from post-processed xyxy pixel boxes: per-query NMS, clipped to the image, best first."""
    import torch
    from torchvision.ops import batched_nms

    boxes = torch.as_tensor(boxes, dtype=torch.float32).reshape(-1, 4).cpu()
    scores = torch.as_tensor(scores, dtype=torch.float32).reshape(-1).cpu()
    query_idx = torch.as_tensor(query_idx, dtype=torch.int64).reshape(-1).cpu()
    if nms_iou < 1.0 and len(boxes):
        keep = batched_nms(boxes, scores, query_idx, nms_iou)  # sorted by score
    else:
        keep = torch.argsort(scores, descending=True)
    w, h = float(image_size[0]), float(image_size[1])
    out: list[Detection] = []
    for i in keep[:max_detections].tolist():
        x1, y1, x2, y2 = boxes[i].tolist()
        box = Box(min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)).clip(w, h)
        q = queries[int(query_idx[i])]
        out.append(Detection(box=box, label=q, score=float(scores[i]), source=source, query=q))
    return out
