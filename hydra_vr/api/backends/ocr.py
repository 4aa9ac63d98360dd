"""OCR with rapidocr (PP-OCR detection + recognition ONNX models shipped in the package)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from PIL import Image

from hydra_vr.api.tools import ToolContext
from hydra_vr.api.types import Box, TextRegion


class RapidOCRReader:
    """Text regions with their text. Options: min_score (drop weaker lines), max_side (downscale), min_side
    (upscale, at most twice, until the shorter side has that many pixels; 0: never)."""

    # Enlarged, PP-OCR also reads "lines" into texture, alone or in pairs ("BLENVCS" 0.56 on the fabric of a
    # suit, "AA5AAA" 0.65 in foliage: both turned a small model's answers), while a misread line of
    # a real paragraph scores as low (0.61 on a printed page) but sits among sure lines. A line under
    # ``sure_score`` is kept only next to a sure one; every line read alone on the packaged photos scores
    # 0.77 or more.
    def __init__(self, ctx: ToolContext | None = None, *, min_score: float = 0.5, sure_score: float = 0.7,
                 max_side: int = 1600, min_side: int = 1200) -> None:
        self.ctx = ctx or ToolContext()
        self.min_score = min_score
        self.sure_score = sure_score
        self.max_side = max_side
        self.min_side = min_side
        self._engine: Any = None
        self._lock = threading.Lock()

    def load(self) -> None:
        with self._lock:
            if self._engine is None:
                from rapidocr import RapidOCR

                # rapidocr sets its logger from this option at construction and otherwise logs
                # every model path at INFO, and a WARNING for every image without text (a normal
                # result, returned as an empty list); keep user output clean.
                self._engine = RapidOCR(params={"Global.log_level": "error"})

    def read_text(self, image: Image.Image) -> list[TextRegion]:
        self.load()
        img = image.convert("RGB")
        # Text a few percent of the photo high is missed at its own scale: on an 810x1080 street photo two signs
        # on a vehicle are read only at 1.5x (and a line of a printed page reads right only so), as they were on
        # the vehicle's crop, which PP-OCR's detector enlarges to 736 pixels on its shorter side.
        scale = 1.0
        if self.min_side and min(img.size) < self.min_side:
            scale = min(2.0, self.min_side / min(img.size))
        scale = min(scale, self.max_side / max(img.size))
        if scale != 1.0:
            img = img.resize((round(img.width * scale), round(img.height * scale)), Image.BICUBIC if scale > 1 else Image.BILINEAR)
        out = self._engine(np.asarray(img))
        if out.boxes is None or out.txts is None:
            return []
        regions = []
        for quad, text, score in zip(out.boxes, out.txts, out.scores):
            if score < self.min_score or not text.strip():
                continue
            q = np.asarray(quad, dtype=np.float32) / scale
            box = Box(float(q[:, 0].min()), float(q[:, 1].min()), float(q[:, 0].max()), float(q[:, 1].max()))
            regions.append(TextRegion(box.clip(image.width, image.height), text.strip(), float(score)))
        sure = [r for r in regions if r.score >= self.sure_score]
        return [r for r in regions if r.score >= self.sure_score or any(_beside(r.box, s.box) for s in sure)]

    def line_orientations(self, image: Image.Image, min_score: float = 0.8) -> list[tuple[str, bool]]:
        """(text, read upside down) of each sure line of ``image`` (recognised at ``sure_score`` or more) whose
        direction PP-OCR's text-line classifier gives with ``min_score`` or more: it tells a line turned half a
        turn, and the recogniser reads the line after turning it back. [] where no line qualifies."""
        self.load()
        engine = self._engine
        try:  # the pipeline's own steps: its output keeps the text but not the classifier's verdicts
            img, op_record = engine.preprocess_img(engine.load_img(np.asarray(image.convert("RGB"))))
            _det, cls, rec, _crops = engine.run_ocr_steps(img, op_record)
        except Exception:  # rapidocr raises its own error where no text line is detected (or lacks these steps)
            return []
        verdicts, texts, scores = cls.cls_res or [], rec.txts or (), rec.scores or ()
        return [(text.strip(), label == "180") for (label, score), text, sure in zip(verdicts, texts, scores)
                if float(score) >= min_score and float(sure) >= self.sure_score and text.strip()]


def _beside(a: Box, b: Box) -> bool:
    """True when line ``a`` lies within one and a half line heights above or below line ``b``, overlapping it
    across: a line of the same block of text."""
    height = max(a.y2 - a.y1, b.y2 - b.y1)
    gap = max(a.y1 - b.y2, b.y1 - a.y2)
    return gap <= 1.5 * height and min(a.x2, b.x2) > max(a.x1, b.x1)
