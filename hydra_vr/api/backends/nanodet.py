"""NanoDet (COCO-80) object detector on onnxruntime: the embedded, offline detector.

Model: ``hydra_vr/api/data/nanodet.onnx`` (provenance, licence and checksum in
``hydra_vr/api/data/NANODET.md``). Input 1x3x416x416; for each stride 8/16/32 the model gives a
sigmoid score map (cells x 80) and a box map (cells x 44 = 4 sides x 11 distance bins); a side's
distance is the softmax expectation over its bins times the stride, measured from the cell
centre. Names are mapped onto COCO classes by :class:`CocoNameMapper`.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from hydra_vr.api.backends.coco import COCO_CLASSES, CocoNameMapper, NameMapping
from hydra_vr.api.tools import ToolContext
from hydra_vr.api.types import Box, Detection, one_box_per_thing

log = logging.getLogger(__name__)

NANODET_SHA256 = "295c2752e79c3fa5b44d61c0a6ee52adf2ee811e903370c3040e0851bdd732cf"
_INPUT = 416
_STRIDES = (8, 16, 32)
_BINS = 11
# Measured on the shipped test photos: BGR with NanoDet's training mean/std scores a bus 0.78
# (RGB scaled to [0, 1] labels it "train" at 0.64); see benchmarks/bench_vision.py.
_MEAN_BGR = np.array([103.53, 116.28, 123.675], dtype=np.float32)
_STD_BGR = np.array([57.375, 57.12, 58.395], dtype=np.float32)
# (x - mean) / std as one multiply-add per channel, in CHW order
_SCALE_CHW = (1.0 / _STD_BGR).astype(np.float32)[:, None, None]
_OFFSET_CHW = (-_MEAN_BGR / _STD_BGR).astype(np.float32)[:, None, None]


def default_model_path() -> Path:
    return Path(str(resources.files("hydra_vr.api").joinpath("data/nanodet.onnx")))


def nms(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float) -> list[int]:
    """Greedy non-maximum suppression over xyxy boxes; indices kept, best first."""
    order = np.argsort(-scores)
    keep: list[int] = []
    areas = (boxes[:, 2] - boxes[:, 0]).clip(0) * (boxes[:, 3] - boxes[:, 1]).clip(0)
    while order.size:
        i = int(order[0])
        keep.append(i)
        rest = order[1:]
        xx1 = np.maximum(boxes[i, 0], boxes[rest, 0])
        yy1 = np.maximum(boxes[i, 1], boxes[rest, 1])
        xx2 = np.minimum(boxes[i, 2], boxes[rest, 2])
        yy2 = np.minimum(boxes[i, 3], boxes[rest, 3])
        inter = (xx2 - xx1).clip(0) * (yy2 - yy1).clip(0)
        iou = inter / np.maximum(areas[i] + areas[rest] - inter, 1e-9)
        order = rest[iou <= iou_threshold]
    return keep


class NanoDetDetector:
    """COCO-80 detector. Options: score_threshold, iou_threshold, max_detections, model_path,
    num_threads, embedding_fallback (map unknown names by MiniLM similarity), verify_checksum, likeliest_floor
    (the least score of :meth:`likeliest`'s box), same_thing_iou (:func:`one_box_per_thing`)."""

    def __init__(
        self,
        ctx: ToolContext | None = None,
        *,
        score_threshold: float = 0.35,
        iou_threshold: float = 0.5,
        max_detections: int = 50,
        model_path: str | None = None,
        num_threads: int = 0,
        embedding_fallback: bool = False,
        embedding_threshold: float = 0.62,
        verify_checksum: bool = True,
        likeliest_floor: float = 0.05,
        same_thing_iou: float = 0.7,
    ) -> None:
        self.ctx = ctx or ToolContext()
        self.score_threshold = score_threshold
        self.iou_threshold = iou_threshold
        # COCO evaluation drops detections under 0.05 (mmdetection's test-time score_thr): below it a box is no
        # guess at all (a giraffe on a photo of coffee cups scores 0.02)
        self.likeliest_floor = likeliest_floor
        self.same_thing_iou = same_thing_iou
        self.max_detections = max_detections
        self.model_path = Path(model_path) if model_path else default_model_path()
        self.num_threads = num_threads
        self.verify_checksum = verify_checksum and model_path is None
        embed = None
        if embedding_fallback and self.ctx.embedder is not None:
            provider = self.ctx.embedder
            embed = lambda texts: provider().embed(texts)  # noqa: E731 - resolved lazily on first unknown name
        self.mapper = CocoNameMapper(embed=embed, threshold=embedding_threshold)
        self._session: Any = None
        self._lock = threading.Lock()
        self._anchors = {s: self._cell_centres(s) for s in _STRIDES}

    @staticmethod
    def _cell_centres(stride: int) -> np.ndarray:
        n = _INPUT // stride
        ys, xs = np.mgrid[0:n, 0:n]
        return np.stack([(xs.ravel() + 0.5) * stride, (ys.ravel() + 0.5) * stride], axis=1).astype(np.float32)

    def load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            if not self.model_path.is_file():
                raise FileNotFoundError(f"NanoDet model not found at {self.model_path}")
            if self.verify_checksum:
                digest = hashlib.sha256(self.model_path.read_bytes()).hexdigest()
                if digest != NANODET_SHA256:
                    raise RuntimeError(f"{self.model_path} has sha256 {digest}, expected {NANODET_SHA256}: reinstall hydra-vr")
            import onnxruntime as ort

            opts = ort.SessionOptions()
            if self.num_threads:
                opts.intra_op_num_threads = self.num_threads
            opts.log_severity_level = 3
            self._session = ort.InferenceSession(str(self.model_path), opts, providers=["CPUExecutionProvider"])
            self._input_name = self._session.get_inputs()[0].name
            self._output_names = [o.name for o in self._session.get_outputs()]

    def preprocess(self, image: Image.Image) -> np.ndarray:
        rgb = np.asarray(image.convert("RGB").resize((_INPUT, _INPUT), Image.BILINEAR))
        bgr_chw = rgb.transpose(2, 0, 1)[::-1]  # a view: no copy until the one write below
        out = np.empty((1, 3, _INPUT, _INPUT), dtype=np.float32)
        np.multiply(bgr_chw, _SCALE_CHW, out=out[0], casting="unsafe")
        out[0] += _OFFSET_CHW
        return out

    def raw_detections(self, image: Image.Image) -> tuple[np.ndarray, np.ndarray]:
        """All cells' boxes (in ``image`` pixels, xyxy) and their 80 class scores."""
        self.load()
        outs = self._session.run(self._output_names, {self._input_name: self.preprocess(image)})
        by_cells: dict[int, dict[str, np.ndarray]] = {}
        for out in outs:
            by_cells.setdefault(out.shape[1], {})["scores" if out.shape[2] == len(COCO_CLASSES) else "dist"] = out[0]
        boxes, scores = [], []
        bins = np.arange(_BINS, dtype=np.float32)
        for stride in _STRIDES:
            level = by_cells[(_INPUT // stride) ** 2]
            logits = level["dist"].reshape(-1, 4, _BINS)
            logits = logits - logits.max(axis=2, keepdims=True)
            prob = np.exp(logits)
            prob /= prob.sum(axis=2, keepdims=True)
            dist = (prob * bins).sum(axis=2) * stride  # left, top, right, bottom
            c = self._anchors[stride]
            boxes.append(np.stack([c[:, 0] - dist[:, 0], c[:, 1] - dist[:, 1], c[:, 0] + dist[:, 2], c[:, 1] + dist[:, 3]], axis=1))
            scores.append(level["scores"])
        all_boxes = np.concatenate(boxes)
        sx, sy = image.width / _INPUT, image.height / _INPUT
        all_boxes *= np.array([sx, sy, sx, sy], dtype=np.float32)
        all_boxes[:, [0, 2]] = all_boxes[:, [0, 2]].clip(0, image.width)
        all_boxes[:, [1, 3]] = all_boxes[:, [1, 3]].clip(0, image.height)
        return all_boxes, np.concatenate(scores)

    def detect_classes(self, image: Image.Image, class_ids: Sequence[int] | None = None) -> list[Detection]:
        """Detections of the given COCO class ids (all classes when None), per-class NMS, best first."""
        boxes, scores = self.raw_detections(image)
        ids = range(len(COCO_CLASSES)) if class_ids is None else class_ids
        found: list[Detection] = []
        for cid in ids:
            cls_scores = scores[:, cid]
            cand = np.nonzero(cls_scores >= self.score_threshold)[0]
            if cand.size == 0:
                continue
            for k in nms(boxes[cand], cls_scores[cand], self.iou_threshold):
                i = cand[k]
                b = boxes[i]
                if b[2] - b[0] < 1 or b[3] - b[1] < 1:
                    continue
                found.append(Detection(Box(*map(float, b)), COCO_CLASSES[cid], float(cls_scores[i]), "nanodet"))
        found.sort(key=lambda d: d.score, reverse=True)
        return found[: self.max_detections]

    def likeliest(self, image: Image.Image, queries: Sequence[str]) -> list[Detection]:
        """The one candidate box of the queries' classes that scores highest, below the threshold too (none when
        no query maps to a class, or it scores under ``likeliest_floor``): what the detector would say is there if
        it had to say."""
        classes = {COCO_CLASSES.index(c): q for q in queries for c in self.mapper.map(q).classes}
        if not classes:
            return []
        boxes, scores = self.raw_detections(image)
        ids = list(classes)
        cell, col = np.unravel_index(int(np.argmax(scores[:, ids])), (scores.shape[0], len(ids)))
        b, cid = boxes[cell], ids[col]
        if b[2] - b[0] < 1 or b[3] - b[1] < 1 or scores[cell, cid] < self.likeliest_floor:
            return []
        return [Detection(Box(*map(float, b)), COCO_CLASSES[cid], float(scores[cell, cid]), "nanodet", query=classes[cid])]

    def explain(self, name: str) -> str:
        return self.mapper.map(name).reason

    def map_name(self, name: str) -> NameMapping:
        return self.mapper.map(name)

    def detect(self, image: Image.Image, queries: Sequence[str]) -> list[Detection]:
        wanted: dict[int, str] = {}
        for q in queries:
            mapping = self.mapper.map(q)
            if not mapping:
                log.info("nanodet: %s", mapping.reason)
            for cls in mapping.classes:
                wanted.setdefault(COCO_CLASSES.index(cls), q)
        if not wanted:
            return []
        dets = self.detect_classes(image, list(wanted))
        named = [Detection(d.box, d.label, d.score, d.source, query=wanted[COCO_CLASSES.index(d.label)]) for d in dets]
        return one_box_per_thing(named, self.same_thing_iou)
