"""OK-VQA in the VQA file layout: questions + annotations (10 answers each), COCO 2014 images.

``OpenEnded_mscoco_{split}2014_questions.json`` and ``mscoco_{split}2014_annotations.json`` sit in
``data_root``; images are ``{coco_root}/{split}2014/COCO_{split}2014_{image_id:012d}.jpg``.
OK-VQA has no separate test set: "test" means val2014 (5,046 questions).
"""

from __future__ import annotations

from pathlib import Path

from hydra_vr.datasets.base import DatasetError, Sample, majority_answer
from hydra_vr.datasets.coco import coco2014_image, coco_image_id
from hydra_vr.datasets.files import field_of, read_json

DEFAULT_SPLIT = "val"
_SPLIT_ALIASES = {"train": "train", "val": "val", "test": "val"}
_Q_WHAT = 'VQA questions: {"questions": [{image_id, question, question_id}]}'
_A_WHAT = 'VQA annotations: {"annotations": [{question_id, answers: [{answer, ...}] x10, ...}]}'


def load_okvqa(
    data_root: Path,
    split: str | None = None,
    limit: int | None = None,
    *,
    coco_root: Path | None = None,
) -> list[Sample]:
    """Load OK-VQA ``split`` (train, val; test = val). ``coco_root`` defaults to ``data_root``.

    ``answers`` holds the 10 human answers (the annotation's ``answer`` field, which VQAEval scores
    against), ``answer`` the most frequent of them. Sample ids are the question_id as a string.
    """
    requested = split or DEFAULT_SPLIT
    if requested not in _SPLIT_ALIASES:
        raise DatasetError(f"unknown OK-VQA split {requested!r}; expected train, val or test")
    coco_split = _SPLIT_ALIASES[requested]
    data_root = Path(data_root)
    images = Path(coco_root) if coco_root is not None else data_root

    q_path = data_root / f"OpenEnded_mscoco_{coco_split}2014_questions.json"
    a_path = data_root / f"mscoco_{coco_split}2014_annotations.json"
    questions = field_of(read_json(q_path, _Q_WHAT, dict), "questions", q_path, "the top-level object")
    annotations = field_of(
        read_json(a_path, _A_WHAT, dict), "annotations", a_path, "the top-level object"
    )
    if not isinstance(questions, list):
        raise DatasetError(f"{q_path}: 'questions' should be a list, got {type(questions).__name__}")
    if not isinstance(annotations, list):
        raise DatasetError(f"{a_path}: 'annotations' should be a list, got {type(annotations).__name__}")

    by_qid: dict[int, dict] = {}
    for i, ann in enumerate(annotations):
        by_qid[field_of(ann, "question_id", a_path, f"annotation #{i}")] = ann

    samples: list[Sample] = []
    for i, q in enumerate(questions):
        if limit is not None and len(samples) >= limit:
            break
        where = f"question #{i}"
        qid = field_of(q, "question_id", q_path, where)
        image_id = coco_image_id(field_of(q, "image_id", q_path, where), f"{q_path}: {where}")
        ann = by_qid.get(qid)
        if ann is None:
            raise DatasetError(f"{a_path}: no annotation for question_id {qid} of {q_path.name}")
        raw_answers = field_of(ann, "answers", a_path, f"annotation of question {qid}")
        answers = [field_of(a, "answer", a_path, f"an answer of question {qid}") for a in raw_answers]
        samples.append(
            Sample(
                id=str(qid),
                image_path=coco2014_image(images, coco_split, image_id),
                query=field_of(q, "question", q_path, where),
                task="vqa",
                answers=answers,
                answer=majority_answer(answers),
                meta={
                    "dataset": "okvqa",
                    "split": requested,
                    "question_id": qid,
                    "image_id": image_id,
                    "question_type": ann.get("question_type"),
                    "answer_type": ann.get("answer_type"),
                },
            )
        )
    return samples
