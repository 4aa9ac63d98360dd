"""GQA questions: ``questions/{split}_{balanced|all}_questions.json``, images ``images/{imageId}.jpg``.

Each file is a JSON object keyed by questionId (a string); ``train_all`` ships chunked in
``questions/train_all_questions/*.json``. Test, challenge and submission files carry no answers.
"""

from __future__ import annotations

import re
from pathlib import Path

from hydra_vr.datasets.base import DatasetError, MissingFileError, Sample
from hydra_vr.datasets.files import field_of, read_json

SPLITS = ("train", "val", "testdev", "test", "challenge", "submission")
VERSIONS = ("balanced", "all")
DEFAULT_SPLIT = "testdev"  # the split ViperGPT and HYDRA report
_META_FIELDS = ("types", "isBalanced", "groups", "fullAnswer", "semanticStr")
_WHAT = "GQA questions: an object {questionId: {question, imageId, answer?, types, ...}}"


def _chunk_number(path: Path) -> tuple[int, str]:
    digits = re.findall(r"\d+", path.stem)
    return (int(digits[-1]) if digits else -1, path.name)


def question_files(data_root: Path, split: str, version: str) -> list[Path]:
    """The question file(s) of a split, in reading order."""
    name = f"{split}_{version}_questions"
    for folder in (data_root / "questions", data_root):  # also accept the zip extracted flat
        if (folder / f"{name}.json").is_file():
            return [folder / f"{name}.json"]
        chunks = sorted((folder / name).glob("*.json"), key=_chunk_number)
        if chunks:
            return chunks
    raise MissingFileError(
        f"{data_root / 'questions' / (name + '.json')}: file not found "
        f"(expected {_WHAT}; train_all may be chunked as questions/{name}/*.json)"
    )


def load_gqa(
    data_root: Path,
    split: str | None = None,
    limit: int | None = None,
    *,
    version: str = "balanced",
    image_dir: Path | None = None,
) -> list[Sample]:
    """Load GQA ``split`` (default testdev) of ``version`` balanced/all.

    ``image_dir`` defaults to ``data_root/images``. Sample ids are the questionId strings.
    """
    split = split or DEFAULT_SPLIT
    if split not in SPLITS:
        raise DatasetError(f"unknown GQA split {split!r}; expected one of {', '.join(SPLITS)}")
    if version not in VERSIONS:
        raise DatasetError(f"unknown GQA version {version!r}; expected 'balanced' or 'all'")
    data_root = Path(data_root)
    images = Path(image_dir) if image_dir is not None else data_root / "images"
    samples: list[Sample] = []
    for path in question_files(data_root, split, version):
        records = read_json(path, _WHAT, dict)
        for qid, record in records.items():
            if limit is not None and len(samples) >= limit:
                return samples
            where = f"question {qid!r}"
            question = field_of(record, "question", path, where)
            image_id = field_of(record, "imageId", path, where)
            if not isinstance(image_id, str | int) or isinstance(image_id, bool):
                raise DatasetError(f"{path}: {where} has imageId {image_id!r}, expected a string")
            answer = record.get("answer")
            samples.append(
                Sample(
                    id=str(qid),
                    image_path=images / f"{image_id}.jpg",
                    query=question,
                    task="vqa",
                    answers=[answer] if answer is not None else [],
                    answer=answer,
                    meta={
                        "dataset": "gqa",
                        "split": split,
                        "imageId": str(image_id),
                        **{k: record[k] for k in _META_FIELDS if k in record},
                    },
                )
            )
    return samples
