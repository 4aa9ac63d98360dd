"""Score one prediction against a sample with its benchmark's official metric.

The metric follows the dataset, not the sample's shape, so that a run is scored the way its
benchmark is published: GQA exact match, OK-VQA VQA accuracy, A-OKVQA direct answer plus
multiple choice, RefCOCO Acc@0.5 on IoU. Only the ``user`` format (anything goes) and unknown
loaders fall back on the sample's shape.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field

from hydra_vr.datasets import Sample
from hydra_vr.datasets.loading import canonical_name
from hydra_vr.eval.metrics import (
    aokvqa_direct_answer,
    aokvqa_multiple_choice,
    box_iou,
    gqa_exact_match,
    gqa_normalized_match,
    normalize_answer,
    vqa_accuracy,
)

IOU_THRESHOLD = 0.5
# dataset (canonical name) -> metric family; the RefCOCO family is matched by prefix.
_FAMILIES = {"gqa": "gqa", "okvqa": "vqa", "aokvqa": "aokvqa", "easy-vqa": "exact"}


def metric_family(dataset: str) -> str:
    """``gqa``, ``vqa``, ``aokvqa``, ``grounding``, ``exact`` or ``auto`` (decide per sample)."""
    key = canonical_name(dataset)
    if key.startswith("refcoco"):
        return "grounding"
    return _FAMILIES.get(key, "auto")


@dataclass
class Scores:
    """``metric`` names the main score; ``score`` is None when the sample has no ground truth."""

    metric: str
    score: float | None
    scores: dict[str, float] = field(default_factory=dict)
    choice: str | None = None  # A-OKVQA / user multiple choice: the option the answer maps to


def choose_option(answer: str | None, choices: Sequence[str]) -> str:
    """The choice an open answer means: equal after VQA normalisation, else contained in the
    answer (or containing it), else the most similar string; ties go to the first choice.

    The loop answers freely; the multiple-choice setting needs one of the given options.
    """
    if not choices:
        raise ValueError("choose_option needs at least one choice")
    norm = normalize_answer(answer or "")
    normed = [normalize_answer(c) for c in choices]
    for choice, n in zip(choices, normed):
        if n == norm:
            return choice
    if norm:
        for choice, n in zip(choices, normed):
            if n and (f" {n} " in f" {norm} " or f" {norm} " in f" {n} "):
                return choice
    ratios = [difflib.SequenceMatcher(None, norm, n).ratio() for n in normed]
    return choices[max(range(len(choices)), key=ratios.__getitem__)]


def _exact(answer: str, gt: str) -> Scores:
    exact = gqa_exact_match(answer, gt)
    return Scores("exact_match", exact, {"exact_match": exact, "normalized_match": gqa_normalized_match(answer, gt)})


def _open_answer(sample: Sample, answer: str, family: str) -> Scores:
    if family == "gqa":
        if sample.answer is None:
            return Scores("exact_match", None)
        return _exact(answer, sample.answer)
    if family == "aokvqa":
        scores: dict[str, float] = {}
        choice = None
        if sample.answers:
            scores["direct_answer"] = aokvqa_direct_answer(answer, sample.answers)
        if sample.choices:
            choice = choose_option(answer, sample.choices)
            if sample.correct_choice is not None:
                scores["multiple_choice"] = aokvqa_multiple_choice(choice, sample.choices, sample.correct_choice)
        return Scores("direct_answer", scores.get("direct_answer"), scores, choice)
    # vqa (OK-VQA), exact (easy-VQA) and auto: by the number of reference answers.
    if len(sample.answers) >= 2 and family in ("vqa", "auto"):
        result = Scores("vqa_accuracy", None)
        result.score = result.scores["vqa_accuracy"] = vqa_accuracy(answer, sample.answers)
    elif sample.answer is not None:
        result = _exact(answer, sample.answer)
    else:
        result = Scores("vqa_accuracy" if family == "vqa" else "exact_match", None)
    if sample.choices:
        result.choice = choose_option(answer, sample.choices)
        if sample.correct_choice is not None:
            result.scores["multiple_choice"] = float(result.choice == sample.choices[sample.correct_choice])
    return result


def score_sample(sample: Sample, answer: str | None, boxes: Sequence[Sequence[float]], dataset: str) -> Scores:
    """Score the loop's ``answer`` (VQA) or first box (grounding) for ``sample`` of ``dataset``."""
    family = metric_family(dataset)
    if sample.task == "grounding" or family == "grounding":
        if sample.box is None:
            return Scores("acc@0.5", None)
        iou = box_iou(boxes[0], sample.box) if boxes else 0.0
        hit = float(iou >= IOU_THRESHOLD)
        return Scores("acc@0.5", hit, {"acc@0.5": hit, "iou": iou})
    return _open_answer(sample, answer or "", family)
