"""The sample type every dataset loader returns, and the errors loaders raise."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from PIL import Image

Task = Literal["vqa", "grounding"]
Box = tuple[float, float, float, float]


class DatasetError(ValueError):
    """A dataset file is missing or does not have the documented format; the message names it."""


class MissingFileError(DatasetError, FileNotFoundError):
    """A dataset or image file does not exist (still a DatasetError, and a FileNotFoundError)."""


@dataclass(frozen=True)
class Sample:
    """One benchmark question (VQA) or referring expression (grounding).

    ``box`` is always ``[x1, y1, x2, y2]`` in pixels with a top-left origin; loaders convert from
    COCO ``[x, y, w, h]`` at the dataset edge so that nothing downstream has to. ``answers`` holds
    every reference answer (10 for OK-VQA, ``[answer]`` for GQA, empty when the split has no
    answers) and ``answer`` the main one (majority / official answer) or None.
    """

    id: str
    image_path: Path
    query: str
    task: Task
    answers: list[str] = field(default_factory=list)
    answer: str | None = None
    choices: list[str] | None = None
    correct_choice: int | None = None
    box: Box | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.task not in ("vqa", "grounding"):
            raise ValueError(f"sample {self.id}: task must be 'vqa' or 'grounding', not {self.task!r}")
        if self.box is not None and len(self.box) != 4:
            raise ValueError(f"sample {self.id}: box must have 4 numbers, got {self.box!r}")

    def require_image(self) -> Path:
        """The image path, or a MissingFileError naming the file and the sample."""
        if not self.image_path.is_file():
            raise MissingFileError(
                f"image file {self.image_path} of sample {self.id} does not exist "
                "(check data_root / image_root and that the images were downloaded)"
            )
        return self.image_path

    def load_image(self) -> Image.Image:
        """The image as RGB; images are checked lazily, here, rather than all at load time."""
        from PIL import Image  # lazy: loading annotations must not need an imaging stack

        with Image.open(self.require_image()) as im:
            return im.convert("RGB")


def check_images(samples: Iterable[Sample], raise_on_missing: bool = False) -> list[Path]:
    """Paths of the images that do not exist (each once, in order of first use).

    With ``raise_on_missing`` a MissingFileError names the first few missing files instead.
    """
    missing: dict[Path, None] = {}
    checked: set[Path] = set()
    for sample in samples:
        path = sample.image_path
        if path in checked:
            continue
        checked.add(path)
        if not path.is_file():
            missing[path] = None
    if missing and raise_on_missing:
        shown = ", ".join(str(p) for p in list(missing)[:5])
        raise MissingFileError(f"{len(missing)} image file(s) missing, e.g. {shown}")
    return list(missing)


def majority_answer(answers: list[str]) -> str | None:
    """Most frequent answer, ties going to the one seen first; None for no answers."""
    if not answers:
        return None
    counts: dict[str, int] = {}
    for a in answers:
        counts[a] = counts.get(a, 0) + 1
    return max(counts, key=counts.__getitem__)  # dicts keep first-seen order: stable ties


def xywh_to_xyxy(box: Any, where: str) -> Box:
    """COCO ``[x, y, w, h]`` -> ``(x1, y1, x2, y2)``; ``where`` names the source for errors."""
    try:
        x, y, w, h = (float(v) for v in box)
    except (TypeError, ValueError):
        raise DatasetError(f"{where}: expected a COCO bbox [x, y, w, h], got {box!r}") from None
    return (x, y, x + w, y + h)
