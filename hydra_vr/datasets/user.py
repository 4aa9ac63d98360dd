"""A simple format for users' own questions: JSON Lines or CSV, one sample per line/row.

Columns: ``image`` (path, absolute or relative to the file's folder, or ``sample:NAME`` for a photo
shipped with a package, see :mod:`hydra_vr.assets`), ``question``, and optionally ``id``,
``answer``, ``answers`` (a JSON list, or ``|``-separated), ``box`` (``x1,y1,x2,y2`` pixels,
top-left origin, or a JSON list), ``choices`` (list or ``|``-separated), ``correct_choice`` (index)
and ``task`` (vqa / grounding). Without ``task``, a row with a box and no answer is a grounding
sample, anything else a VQA sample. Other columns (``category``, ...) go to ``meta``.

``answers`` are alternatives the author accepts (``["2", "two"]``), not votes of ten annotators:
the eval scores a prediction 1 when it matches any of them (see :mod:`hydra_vr.eval.scoring`).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hydra_vr.assets import SampleImageError, resolve_image
from hydra_vr.datasets.base import DatasetError, MissingFileError, Sample

SUFFIXES = (".jsonl", ".csv")
_KNOWN = {"id", "image", "question", "answer", "answers", "box", "choices", "correct_choice", "task"}


def user_file(data_root: Path, split: str | None) -> Path:
    """``data_root`` itself when it is a file, else ``{data_root}/{split or 'data'}.jsonl|.csv``."""
    if data_root.is_file():
        return data_root
    stem = split or "data"
    for suffix in SUFFIXES:
        if (data_root / f"{stem}{suffix}").is_file():
            return data_root / f"{stem}{suffix}"
    raise MissingFileError(
        f"{data_root}: file not found (expected a .jsonl or .csv file, or a folder holding "
        f"{stem}.jsonl or {stem}.csv)"
    )


def _rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(location for errors, row) pairs; empty CSV cells and blank lines are dropped."""
    try:
        with path.open("r", encoding="utf-8", newline="") as f:
            if path.suffix.lower() == ".csv":
                reader = csv.DictReader(f)
                for row in reader:
                    cells = {k: v for k, v in row.items() if k and v not in (None, "")}
                    yield f"row {reader.line_num}", cells
                return
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    raise DatasetError(f"{path}: line {lineno} is not valid JSON ({e.msg})") from None
                if not isinstance(row, dict):
                    kind = type(row).__name__
                    raise DatasetError(f"{path}: line {lineno} should be a JSON object, got {kind}")
                yield f"line {lineno}", row
    except UnicodeDecodeError as e:
        raise DatasetError(f"{path}: not UTF-8 text ({e.reason})") from None


def _str_list(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        return [part.strip() for part in value.split("|") if part.strip()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise DatasetError(f"{where}: expected a list of strings or a '|'-separated string, got {value!r}")


def _box(value: Any, where: str) -> tuple[float, float, float, float]:
    parts = value.split(",") if isinstance(value, str) else value
    try:
        x1, y1, x2, y2 = (float(p) for p in parts)
    except (TypeError, ValueError):
        raise DatasetError(f"{where}: box should be 'x1,y1,x2,y2', got {value!r}") from None
    if x2 < x1 or y2 < y1:
        raise DatasetError(f"{where}: box {value!r} is not x1,y1,x2,y2 with x1 <= x2 and y1 <= y2")
    return (x1, y1, x2, y2)


def _image(value: Any, folder: Path, where: str) -> Path:
    """``sample:NAME`` -> the packaged photo; otherwise a path, relative ones to the file's folder."""
    text = str(value)
    if text.startswith("sample:"):
        try:
            return resolve_image(text)
        except SampleImageError as e:
            raise DatasetError(f"{where}: image {text!r}: {e}") from None
    image = Path(text).expanduser()
    return image if image.is_absolute() else folder / image


def load_user(data_root: Path, split: str | None = None, limit: int | None = None) -> list[Sample]:
    """Load a user JSONL/CSV file (``data_root``), or ``{data_root}/{split}.jsonl|.csv``."""
    path = user_file(Path(data_root), split)
    if path.suffix.lower() not in SUFFIXES:
        raise DatasetError(f"{path}: unsupported file type; expected one of {', '.join(SUFFIXES)}")
    samples: list[Sample] = []
    for loc, row in _rows(path):
        if limit is not None and len(samples) >= limit:
            break
        where = f"{path}: {loc}"
        for required in ("image", "question"):
            if required not in row:
                raise DatasetError(f"{where} is missing column {required!r}")
        answers = _str_list(row["answers"], where) if "answers" in row else []
        # Alternatives, not votes: the first one listed is the main answer.
        answer = str(row["answer"]) if "answer" in row else (answers[0] if answers else None)
        if answer is not None and not answers:
            answers = [answer]
        box = _box(row["box"], where) if "box" in row else None
        task = row.get("task") or ("grounding" if box is not None and answer is None else "vqa")
        if task not in ("vqa", "grounding"):
            raise DatasetError(f"{where}: task should be 'vqa' or 'grounding', got {task!r}")
        choices = _str_list(row["choices"], where) if "choices" in row else None
        correct = row.get("correct_choice")
        if correct is not None:
            try:
                correct = int(correct)
            except (TypeError, ValueError):
                message = f"{where}: correct_choice should be an integer, got {correct!r}"
                raise DatasetError(message) from None
            if choices is None or not 0 <= correct < len(choices):
                raise DatasetError(f"{where}: correct_choice {correct} does not index the choices")
        samples.append(
            Sample(
                id=str(row.get("id", f"{path.stem}-{len(samples)}")),
                image_path=_image(row["image"], path.parent, where),
                query=str(row["question"]),
                task=task,
                answers=answers,
                answer=answer,
                choices=choices,
                correct_choice=correct,
                box=box,
                meta={"dataset": "user", "file": str(path)}
                | {k: v for k, v in row.items() if k not in _KNOWN},
            )
        )
    return samples
