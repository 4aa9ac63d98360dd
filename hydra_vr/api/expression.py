"""Whether a face smiles, from its pixels: "Is the chef smiling?".

No offline model reads a face's expression, and the describe LLM, told only that a face is there, answers with its
prior. OpenCV ships a Viola-Jones cascade trained on smiling mouths (``haarcascade_smile.xml``, inside opencv-python,
which the OCR already needs). Each face the face detector finds is scaled to a fixed size, and the cascade looks for a
smile in its lower half, where the mouth is; a face is read smiling where a detection, kept by many overlapping
windows (the cascade's own confidence), is centred across the face. The toolbox asks this module before any VQA
backend; it decides only where the patch shows faces and the main ones agree, else the backend answers as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from hydra_vr.api.types import Box, Detection
from hydra_vr.asked import SmileAsked

FACE_SIDE = 160  # each face is read at this size: the cascade's windows start at 36 x 18 pixels
MIN_FACE = 24  # a face smaller than this (pixels) has too few mouth pixels to read
NEIGHBOURS = 50  # overlapping detections a smile needs: a closed mouth under a moustache gathered 40, smiles 55 to 115
MAIN_FACE = 0.5  # faces at least this share of the largest face's side are the ones a question about the patch means


@dataclass(frozen=True)
class FaceReading:
    """One face's box in the patch and whether it smiles."""

    box: Box
    smiling: bool


def smile_cascade() -> Any:
    """OpenCV's smile cascade, loaded afresh (4 ms): a cascade object is not safe to share between threads at once."""
    import cv2

    path = cv2.data.haarcascades + "haarcascade_smile.xml"
    cascade = cv2.CascadeClassifier(path)
    if cascade.empty():
        raise RuntimeError(f"cannot load the OpenCV smile cascade {path}")
    return cascade


def face_smiles(face: np.ndarray, cascade: Any = None) -> bool:
    """Whether the grey ``face`` crop (any size) shows a smile: a cascade detection in its lower half, centred across it.
    ``cascade``: a :func:`smile_cascade` to reuse over several faces."""
    import cv2

    gray = cv2.equalizeHist(cv2.resize(face, (FACE_SIDE, FACE_SIDE), interpolation=cv2.INTER_CUBIC))
    found = (cascade or smile_cascade()).detectMultiScale(gray[FACE_SIDE // 2:, :], scaleFactor=1.1, minNeighbors=NEIGHBOURS,
                                                          minSize=(FACE_SIDE // 4, FACE_SIDE // 10))
    return any(FACE_SIDE / 4 <= x + w / 2 <= 3 * FACE_SIDE / 4 for x, _, w, _ in np.asarray(found).reshape(-1, 4))


def read_faces(image: Image.Image, faces: Sequence[Detection]) -> list[FaceReading]:
    """The main faces of ``image`` (the largest, and those at least :data:`MAIN_FACE` of its side) with whether each
    smiles; faces under :data:`MIN_FACE` pixels are not read."""
    sized = [d for d in faces if min(d.box.width, d.box.height) >= MIN_FACE]
    if not sized:
        return []
    largest = max(min(d.box.width, d.box.height) for d in sized)
    gray, cascade = np.asarray(image.convert("L")), smile_cascade()
    read = [(d.box, _smiles_at(gray, d.box, cascade)) for d in sized if min(d.box.width, d.box.height) >= MAIN_FACE * largest]
    return [FaceReading(box, smiling) for box, smiling in read if smiling is not None]


def _smiles_at(gray: np.ndarray, box: Box, cascade: Any) -> bool | None:
    """Whether the face at ``box`` of the grey image smiles; None where the box holds no pixels."""
    b = box.clip(gray.shape[1], gray.shape[0])
    crop = gray[int(b.y1):int(round(b.y2)), int(b.x1):int(round(b.x2))]
    return face_smiles(crop, cascade) if crop.size else None


def pick_smiling(crops: Sequence[Image.Image], faces: Sequence[Sequence[float] | None]) -> int | None:
    """Which of several people ``crops`` smiles ("the grinning waiter"), from each one's face (``faces``: its box in
    that crop, None where none was found): the index of the only one read smiling, where at least two faces of
    :data:`MIN_FACE` pixels or more were read; None otherwise (the caller picks another way)."""
    read: dict[int, bool] = {}
    cascade = smile_cascade()
    for i, (crop, face) in enumerate(zip(crops, faces)):
        box = Box(*face[:4]) if face is not None else None
        if box is not None and min(box.width, box.height) >= MIN_FACE:
            smiling = _smiles_at(np.asarray(crop.convert("L")), box, cascade)
            if smiling is not None:
                read[i] = smiling
    smilers = [i for i, smiling in read.items() if smiling]
    return smilers[0] if len(read) >= 2 and len(smilers) == 1 else None


def answer_smile(readings: Sequence[FaceReading], asked: SmileAsked) -> tuple[str, str] | None:
    """(answer, evidence) of ``asked`` from the patch's face ``readings``, or None: no face, or the faces disagree."""
    if not readings or len({r.smiling for r in readings}) != 1:
        return None
    pole = "smiling" if readings[0].smiling else "not smiling"
    answer = next((a for a, p in asked.claims if p == pole), None)
    if answer is None:
        return None
    shown = ", ".join(str([round(v) for v in r.box.to_list()]) for r in readings[:4])
    return answer, f"faces read: {len(readings)}, each {pole} (a smile sought in the lower half of each face: {shown}) -> {pole}"


__all__ = ["FaceReading", "answer_smile", "face_smiles", "pick_smiling", "read_faces", "smile_cascade"]
