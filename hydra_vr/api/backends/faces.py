"""Face detectors: OpenCV's Haar cascade (ships inside opencv) and mediapipe (optional extra)."""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np
from PIL import Image

from hydra_vr.api.tools import ToolContext
from hydra_vr.api.types import Box, Detection


class OpenCVFaceDetector:
    """Frontal faces with OpenCV's Haar cascade. The cascade's level weight w is squashed into
    a score in (0, 1) as sigmoid(w - 2): w around 2 is the cascade's own borderline."""

    def __init__(
        self,
        ctx: ToolContext | None = None,
        *,
        cascade: str = "haarcascade_frontalface_default.xml",
        min_neighbors: int = 5,
        scale_factor: float = 1.1,
        max_side: int = 1024,
        min_score: float = 0.5,
    ) -> None:
        self.ctx = ctx or ToolContext()
        self.cascade_name = cascade
        self.min_neighbors = min_neighbors
        self.scale_factor = scale_factor
        self.max_side = max_side
        self.min_score = min_score
        self._cascade: Any = None
        self._lock = threading.Lock()

    def load(self) -> None:
        with self._lock:
            if self._cascade is None:
                import cv2

                path = cv2.data.haarcascades + self.cascade_name
                cascade = cv2.CascadeClassifier(path)
                if cascade.empty():
                    raise RuntimeError(f"cannot load the OpenCV face cascade {path}")
                self._cascade = cascade

    def detect_faces(self, image: Image.Image) -> list[Detection]:
        self.load()
        gray = image.convert("L")
        scale = min(1.0, self.max_side / max(gray.size))  # the cascade's cost grows with pixels
        if scale < 1.0:
            gray = gray.resize((round(gray.width * scale), round(gray.height * scale)), Image.BILINEAR)
        rects, _, weights = self._cascade.detectMultiScale3(
            np.asarray(gray), scaleFactor=self.scale_factor, minNeighbors=self.min_neighbors,
            minSize=(20, 20), outputRejectLevels=True,
        )
        dets = []
        for (x, y, w, h), weight in zip(np.asarray(rects).reshape(-1, 4), np.asarray(weights).ravel()):
            score = 1.0 / (1.0 + math.exp(-(float(weight) - 2.0)))
            if score < self.min_score:
                continue
            box = Box(x / scale, y / scale, (x + w) / scale, (y + h) / scale).clip(image.width, image.height)
            dets.append(Detection(box, "face", score, "opencv_faces"))
        return sorted(dets, key=lambda d: d.score, reverse=True)


class MediaPipeFaceDetector:
    """mediapipe's BlazeFace short-range detector (install the extra: hydra-vr[faces-mediapipe])."""

    def __init__(self, ctx: ToolContext | None = None, *, min_score: float = 0.5, model_selection: int = 1) -> None:
        self.ctx = ctx or ToolContext()
        self.min_score = min_score
        self.model_selection = model_selection
        self._detector: Any = None
        self._lock = threading.Lock()

    def load(self) -> None:
        with self._lock:
            if self._detector is None:
                try:
                    import mediapipe as mp
                except ImportError as exc:
                    raise RuntimeError("mediapipe is not installed: pip install 'hydra-vr[faces-mediapipe]'") from exc
                self._detector = mp.solutions.face_detection.FaceDetection(
                    model_selection=self.model_selection, min_detection_confidence=self.min_score
                )

    def detect_faces(self, image: Image.Image) -> list[Detection]:
        self.load()
        res = self._detector.process(np.asarray(image.convert("RGB")))
        dets = []
        for d in res.detections or []:
            rb = d.location_data.relative_bounding_box
            box = Box(rb.xmin * image.width, rb.ymin * image.height, (rb.xmin + rb.width) * image.width,
                      (rb.ymin + rb.height) * image.height).clip(image.width, image.height)
            dets.append(Detection(box, "face", float(d.score[0]), "mediapipe_faces"))
        return sorted(dets, key=lambda d: d.score, reverse=True)
