"""A-OKVQA: ``aokvqa_v1p0_{split}.json`` (a JSON list), COCO 2017 images ``{split}2017/{id:012d}.jpg``.

The test split has no ``correct_choice_idx`` / ``direct_answers``; such samples load with
``answer=None`` and ``correct_choice=None``.
"""

from __future__ import annotations

from pathlib import Path

from hydra_vr.datasets.base import DatasetError, Sample, majority_answer
from hydra_vr.datasets.coco import coco2017_image, coco_image_id
from hydra_vr.datasets.files import field_of, read_json

SPLITS = ("train", "val", "test")
DEFAULT_SPLIT = "val"  # 1,145 questions; test answers are private
_WHAT = "A-OKVQA: a list of {question_id, image_id, question, choices, correct_choice_idx, ...}"


def load_aokvqa(
    data_root: Path,
    split: str | None = None,
    limit: int | None = None,
    *,
    coco_root: Path | None = None,
) -> list[Sample]:
    """Load A-OKVQA ``split`` (default val). ``coco_root`` defaults to ``data_root``.

    ``answers`` are the 10 ``direct_answers`` (scored with ``aokvqa_direct_answer``), ``choices``
    and ``correct_choice`` the multiple-choice setting; ``answer`` is the correct choice (falling
    back to the majority direct answer). ``meta["difficult_direct_answer"]`` marks questions the
    direct-answer evaluation skips.
    """
    split = split or DEFAULT_SPLIT
    if split not in SPLITS:
        raise DatasetError(f"unknown A-OKVQA split {split!r}; expected one of {', '.join(SPLITS)}")
    data_root = Path(data_root)
    images = Path(coco_root) if coco_root is not None else data_root
    path = data_root / f"aokvqa_v1p0_{split}.json"
    records = read_json(path, _WHAT, list)

    samples: list[Sample] = []
    for i, rec in enumerate(records):
        if limit is not None and len(samples) >= limit:
            break
        where = f"record #{i}"
        qid = field_of(rec, "question_id", path, where)
        image_id = coco_image_id(field_of(rec, "image_id", path, where), f"{path}: {where}")
        choices = list(field_of(rec, "choices", path, where))
        correct = rec.get("correct_choice_idx")
        if correct is not None and not (isinstance(correct, int) and 0 <= correct < len(choices)):
            raise DatasetError(f"{path}: {where} has correct_choice_idx {correct!r} outside its choices")
        direct = list(rec.get("direct_answers") or [])
        samples.append(
            Sample(
                id=str(qid),
                image_path=coco2017_image(images, split, image_id),
                query=field_of(rec, "question", path, where),
                task="vqa",
                answers=direct,
                answer=choices[correct] if correct is not None else majority_answer(direct),
                choices=choices,
                correct_choice=correct,
                meta={
                    "dataset": "aokvqa",
                    "split": split,
                    "question_id": str(qid),
                    "image_id": image_id,
                    "difficult_direct_answer": bool(rec.get("difficult_direct_answer", False)),
                    "rationales": list(rec.get("rationales") or []),
                },
            )
        )
    return samples
