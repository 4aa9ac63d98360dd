"""Score one prediction against a sample with its benchmark's official metric.

The metric follows the dataset, not the sample's shape, so that a run is scored the way its
benchmark is published: GQA exact match, OK-VQA / VQAv2 VQA accuracy, A-OKVQA direct answer plus
multiple choice, RefCOCO Acc@0.5 on IoU. Users' own files score a prediction 1 when it matches
any accepted answer. Which dataset gets which metric is declared once, in :data:`METRIC_FAMILIES`;
only loaders it does not know (registered by callers) fall back on the sample's shape (``auto``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hydra_vr.datasets import Sample
from hydra_vr.datasets.loading import canonical_name
from hydra_vr.eval.metrics import (
    any_answer_match,
    aokvqa_direct_answer,
    aokvqa_multiple_choice,
    box_iou,
    gqa_exact_match,
    gqa_normalized_match,
    normalize_answer,
    vqa_accuracy,
)

IOU_THRESHOLD = 0.5
GROUNDING_METRIC = "acc@0.5"

# The one place that says how each dataset (canonical name) is scored:
#   gqa       official GQA exact match on raw strings (normalised match reported beside it)
#   vqa       official VQA accuracy over 10 annotators, leave-one-out
#   aokvqa    official A-OKVQA direct answer (no leave-one-out) and multiple choice
#   exact     exact match with the one answer (easy-VQA's generated questions)
#   any       1 when the normalised prediction equals any accepted alternative (user files)
#   grounding Acc@0.5 on IoU
# Datasets that start with a key of METRIC_FAMILY_PREFIXES (refcoco, refcoco+, refcocog-umd, ...)
# take its family; anything else is "auto" (decided per sample from its answers).
METRIC_FAMILIES: dict[str, str] = {
    "gqa": "gqa", "okvqa": "vqa", "vqav2": "vqa", "aokvqa": "aokvqa", "easy-vqa": "exact", "user": "any",
}
METRIC_FAMILY_PREFIXES: dict[str, str] = {"refcoco": "grounding"}


def metric_family(dataset: str) -> str:
    """``gqa``, ``vqa``, ``aokvqa``, ``exact``, ``any``, ``grounding`` or ``auto`` (decide per sample)."""
    key = canonical_name(dataset)
    for prefix, family in METRIC_FAMILY_PREFIXES.items():
        if key.startswith(prefix):
            return family
    return METRIC_FAMILIES.get(key, "auto")


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


def _with_choice(sample: Sample, answer: str, result: Scores) -> Scores:
    """Add the multiple-choice mapping (and its score when the correct choice is known)."""
    if sample.choices:
        result.choice = choose_option(answer, sample.choices)
        if sample.correct_choice is not None:
            result.scores["multiple_choice"] = float(result.choice == sample.choices[sample.correct_choice])
    return result


def _score_gqa(sample: Sample, answer: str) -> Scores:
    return Scores("exact_match", None) if sample.answer is None else _exact(answer, sample.answer)


def _score_aokvqa(sample: Sample, answer: str) -> Scores:
    scores: dict[str, float] = {}
    choice = None
    if sample.answers:
        scores["direct_answer"] = aokvqa_direct_answer(answer, sample.answers)
    if sample.choices:
        choice = choose_option(answer, sample.choices)
        if sample.correct_choice is not None:
            scores["multiple_choice"] = aokvqa_multiple_choice(choice, sample.choices, sample.correct_choice)
    return Scores("direct_answer", scores.get("direct_answer"), scores, choice)


def _by_answer_count(sample: Sample, answer: str, no_gt_metric: str) -> Scores:
    """VQA accuracy with several annotators' answers, exact match with one."""
    if len(sample.answers) >= 2:
        score = vqa_accuracy(answer, sample.answers)
        return _with_choice(sample, answer, Scores("vqa_accuracy", score, {"vqa_accuracy": score}))
    if sample.answer is not None:
        return _with_choice(sample, answer, _exact(answer, sample.answer))
    return _with_choice(sample, answer, Scores(no_gt_metric, None))


def _score_exact(sample: Sample, answer: str) -> Scores:
    result = _exact(answer, sample.answer) if sample.answer is not None else Scores("exact_match", None)
    return _with_choice(sample, answer, result)


def _score_any(sample: Sample, answer: str) -> Scores:
    accepted = [*sample.answers, *([sample.answer] if sample.answer is not None else [])]
    if not accepted:
        return _with_choice(sample, answer, Scores("answer_match", None))
    score = any_answer_match(answer, accepted)
    return _with_choice(sample, answer, Scores("answer_match", score, {"answer_match": score}))


# metric family -> scorer of an open (VQA) answer; grounding is scored on boxes in score_sample.
_VQA_SCORERS: dict[str, Callable[[Sample, str], Scores]] = {
    "gqa": _score_gqa,
    "vqa": lambda sample, answer: _by_answer_count(sample, answer, "vqa_accuracy"),
    "aokvqa": _score_aokvqa,
    "exact": _score_exact,
    "any": _score_any,
    "auto": lambda sample, answer: _by_answer_count(sample, answer, "exact_match"),
}


def score_sample(sample: Sample, answer: str | None, boxes: Sequence[Sequence[float]], dataset: str) -> Scores:
    """Score the loop's ``answer`` (VQA) or first box (grounding) for ``sample`` of ``dataset``."""
    family = metric_family(dataset)
    if sample.task == "grounding" or family == "grounding":
        if sample.box is None:
            return Scores(GROUNDING_METRIC, None)
        iou = box_iou(boxes[0], sample.box) if boxes else 0.0
        hit = float(iou >= IOU_THRESHOLD)
        return Scores(GROUNDING_METRIC, hit, {GROUNDING_METRIC: hit, "iou": iou})
    return _VQA_SCORERS[family](sample, answer or "")
