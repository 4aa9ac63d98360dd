"""easy-VQA (PyPI ``easy-vqa``): a built-in benchmark that needs no download beyond the package.

The package ships ``easy_vqa/data/{train,test}/questions.json`` (a list of
``[question, answer, image_id]``), ``data/{split}/images/{image_id}.png`` (64x64 RGB shapes) and
``data/answers.txt`` (13 answers). The files are read directly; the package is not imported.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from hydra_vr.datasets.base import DatasetError, MissingFileError, Sample
from hydra_vr.datasets.files import read_json, require_file

SPLITS = ("train", "test")
DEFAULT_SPLIT = "test"  # 9,673 questions on 1,000 images
_WHAT = "easy-VQA questions: a list of [question, answer, image_id]"


def easy_vqa_data_dir() -> Path:
    """The installed package's ``data`` folder (found without importing the package)."""
    spec = importlib.util.find_spec("easy_vqa")
    if spec is None or not spec.submodule_search_locations:
        raise MissingFileError("the easy-vqa package is not installed: pip install easy-vqa")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def easy_vqa_answers(data_root: Path | None = None) -> list[str]:
    """The closed answer set (``answers.txt``), e.g. to constrain a model's output."""
    path = require_file(Path(data_root or easy_vqa_data_dir()) / "answers.txt", "one answer per line")
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_easy_vqa(
    data_root: Path | None = None, split: str | None = None, limit: int | None = None
) -> list[Sample]:
    """Load easy-VQA ``split`` (train or test, default test) from ``data_root`` (a copy of the
    package's ``data`` folder) or, when None, from the installed package."""
    split = split or DEFAULT_SPLIT
    if split not in SPLITS:
        raise DatasetError(f"unknown easy-VQA split {split!r}; expected train or test")
    root = Path(data_root) if data_root is not None else easy_vqa_data_dir()
    path = root / split / "questions.json"
    records = read_json(path, _WHAT, list)
    samples: list[Sample] = []
    for i, rec in enumerate(records[:limit] if limit is not None else records):
        if not (isinstance(rec, list) and len(rec) == 3):
            raise DatasetError(f"{path}: item #{i} should be [question, answer, image_id], got {rec!r}")
        question, answer, image_id = rec
        samples.append(
            Sample(
                id=f"easy-vqa-{split}-{i}",
                image_path=root / split / "images" / f"{image_id}.png",
                query=question,
                task="vqa",
                answers=[answer],
                answer=answer,
                meta={"dataset": "easy-vqa", "split": split, "image_id": image_id},
            )
        )
    return samples
