"""COCO image file names, shared by OK-VQA, A-OKVQA and the RefCOCO family."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra_vr.datasets.base import DatasetError


def coco_image_id(value: Any, where: str) -> int:
    """COCO ids are integers; a bool or a non-numeric string means the file is malformed."""
    if isinstance(value, bool):
        raise DatasetError(f"{where}: image_id should be an integer, got {value!r}")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise DatasetError(f"{where}: image_id should be an integer, got {value!r}") from None


def coco2014_image(root: Path, split: str, image_id: int) -> Path:
    """``{split}2014/COCO_{split}2014_{id:012d}.jpg`` (OK-VQA, RefCOCO/+/g)."""
    return root / f"{split}2014" / f"COCO_{split}2014_{image_id:012d}.jpg"


def coco2017_image(root: Path, split: str, image_id: int) -> Path:
    """``{split}2017/{id:012d}.jpg`` (A-OKVQA)."""
    return root / f"{split}2017" / f"{image_id:012d}.jpg"
