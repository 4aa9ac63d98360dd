"""Official answer and box metrics for the benchmarks in shared/DATASETS.md.

Every score is a float in [0, 1]; reports multiply by 100. The VQA normalisation follows the
official VQAEval (GT-Vision-Lab/VQA), including its quirks, so that numbers are comparable with
published ones. The evaluators shipped with ViperGPT and HYDRA deviate from these definitions
(substring matching, failed samples dropped from mean IoU); nothing here copies that.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

Box = tuple[float, float, float, float]

# --------------------------------------------------------------------------------------------
# VQA answer normalisation (data tables as in VQAEval)
# --------------------------------------------------------------------------------------------

_CONTRACTIONS: dict[str, str] = {
    "aint": "ain't", "arent": "aren't", "cant": "can't", "couldve": "could've",
    "couldnt": "couldn't", "couldn'tve": "couldn't've", "couldnt've": "couldn't've",
    "didnt": "didn't", "doesnt": "doesn't", "dont": "don't", "hadnt": "hadn't",
    "hadnt've": "hadn't've", "hadn'tve": "hadn't've", "hasnt": "hasn't", "havent": "haven't",
    "hed": "he'd", "hed've": "he'd've", "he'dve": "he'd've", "hes": "he's", "howd": "how'd",
    "howll": "how'll", "hows": "how's", "Id've": "I'd've", "I'dve": "I'd've", "Im": "I'm",
    "Ive": "I've", "isnt": "isn't", "itd": "it'd", "itd've": "it'd've", "it'dve": "it'd've",
    "itll": "it'll", "let's": "let's", "maam": "ma'am", "mightnt": "mightn't",
    "mightnt've": "mightn't've", "mightn'tve": "mightn't've", "mightve": "might've",
    "mustnt": "mustn't", "mustve": "must've", "neednt": "needn't", "notve": "not've",
    "oclock": "o'clock", "oughtnt": "oughtn't", "ow's'at": "'ow's'at", "'ows'at": "'ow's'at",
    "'ow'sat": "'ow's'at", "shant": "shan't", "shed've": "she'd've", "she'dve": "she'd've",
    "she's": "she's", "shouldve": "should've", "shouldnt": "shouldn't",
    "shouldnt've": "shouldn't've", "shouldn'tve": "shouldn't've", "somebody'd": "somebodyd",
    "somebodyd've": "somebody'd've", "somebody'dve": "somebody'd've",
    "somebodyll": "somebody'll", "somebodys": "somebody's", "someoned": "someone'd",
    "someoned've": "someone'd've", "someone'dve": "someone'd've", "someonell": "someone'll",
    "someones": "someone's", "somethingd": "something'd", "somethingd've": "something'd've",
    "something'dve": "something'd've", "somethingll": "something'll", "thats": "that's",
    "thered": "there'd", "thered've": "there'd've", "there'dve": "there'd've",
    "therere": "there're", "theres": "there's", "theyd": "they'd", "theyd've": "they'd've",
    "they'dve": "they'd've", "theyll": "they'll", "theyre": "they're", "theyve": "they've",
    "twas": "'twas", "wasnt": "wasn't", "wed've": "we'd've", "we'dve": "we'd've",
    "weve": "we've", "werent": "weren't", "whatll": "what'll", "whatre": "what're",
    "whats": "what's", "whatve": "what've", "whens": "when's", "whered": "where'd",
    "wheres": "where's", "whereve": "where've", "whod": "who'd", "whod've": "who'd've",
    "who'dve": "who'd've", "wholl": "who'll", "whos": "who's", "whove": "who've",
    "whyll": "why'll", "whyre": "why're", "whys": "why's", "wont": "won't",
    "wouldve": "would've", "wouldnt": "wouldn't", "wouldnt've": "wouldn't've",
    "wouldn'tve": "wouldn't've", "yall": "y'all", "yall'll": "y'all'll", "y'allll": "y'all'll",
    "yall'd've": "y'all'd've", "y'alld've": "y'all'd've", "y'all'dve": "y'all'd've",
    "youd": "you'd", "youd've": "you'd've", "you'dve": "you'd've", "youll": "you'll",
    "youre": "you're", "youve": "you've",
}  # fmt: skip

_NUMBER_WORDS: dict[str, str] = {
    "none": "0", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4",
    "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10",
}  # fmt: skip

_ARTICLES = frozenset({"a", "an", "the"})

# Removed or turned into a space; ' : # $ % & * are kept on purpose (official list).
_PUNCTUATION = (";", "/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-",
                ">", "<", "@", "`", ",", "?", "!")  # fmt: skip

_DIGIT_COMMA_DIGIT = re.compile(r"\d,\d")
# The official pattern's "(?!<=\d)" is a mistyped look-behind: it only refuses periods followed by
# the literal text "<=digit". Kept as is so edge cases score exactly as the official tool.
_PERIOD = re.compile(r"(?!<=\d)\.(?!\d)")
# The official call passes re.UNICODE (== 32) where re.sub expects `count`: at most 32 periods go.
_PERIOD_MAX_REMOVALS = 32


def _clean_whitespace(text: str) -> str:
    return text.replace("\n", " ").replace("\t", " ").strip()


def _process_punctuation(text: str) -> str:
    # Both tests look at the input text, not the partly processed one (as the official code does).
    delete_all = _DIGIT_COMMA_DIGIT.search(text) is not None
    out = text
    for p in _PUNCTUATION:
        if delete_all or p + " " in text or " " + p in text:
            out = out.replace(p, "")
        else:
            out = out.replace(p, " ")
    return _PERIOD.sub("", out, count=_PERIOD_MAX_REMOVALS)


def _process_digits_articles(text: str) -> str:
    words = [_NUMBER_WORDS.get(w, w) for w in text.lower().split()]
    words = [w for w in words if w not in _ARTICLES]
    return " ".join(_CONTRACTIONS.get(w, w) for w in words)


def normalize_answer(text: str) -> str:
    """VQA answer normalisation: whitespace, punctuation, then number words/articles/contractions.

    ``"The Dog." -> "dog"``, ``"2,000" -> "2000"``, ``"two dogs" -> "2 dogs"``.
    """
    return _process_digits_articles(_process_punctuation(_clean_whitespace(text)))


def vqa_accuracy(prediction: str, answers: Sequence[str]) -> float:
    """Official VQA accuracy of one prediction against the (10) human answers, in [0, 1].

    Normalisation is applied to the prediction and the answers only when the answers are not all
    identical (official rule). Each answer i is left out in turn and scores
    ``min(1, #(other answers == prediction) / 3)``; the result is the mean over i, so m matching
    answers out of 10 give 0.3, 0.6, 0.9, then 1.0 for m >= 4.
    """
    if len(answers) < 2:
        # Leave-one-out with a single reference always scores 0: refuse instead of misreporting.
        raise ValueError(
            f"vqa_accuracy needs several reference answers (VQA has 10), got {len(answers)}; "
            "use gqa_exact_match / gqa_normalized_match for single-answer data"
        )
    pred = _clean_whitespace(prediction)
    refs = [_clean_whitespace(a) for a in answers]
    if len(set(refs)) > 1:
        refs = [normalize_answer(a) for a in refs]
        pred = normalize_answer(pred)
    matches = sum(ref == pred for ref in refs)
    # Leaving out answer i removes one match exactly when answer i itself matches.
    total = sum(min(1.0, (matches - (ref == pred)) / 3) for ref in refs)
    return total / len(refs)


def any_answer_match(prediction: str, answers: Sequence[str]) -> float:
    """1.0 when the normalised prediction equals any of the accepted ``answers``, else 0.0.

    For users' own files, whose ``answers`` are alternatives one person accepts (``["2", "two"]``),
    not the votes of ten annotators that :func:`vqa_accuracy` weighs. Normalisation as in VQA.
    """
    pred = normalize_answer(prediction)
    return float(any(normalize_answer(a) == pred for a in answers))


# --------------------------------------------------------------------------------------------
# GQA
# --------------------------------------------------------------------------------------------


def gqa_exact_match(prediction: str, answer: str) -> float:
    """Official GQA score: 1.0 when ``prediction == answer`` as raw strings, else 0.0."""
    return float(prediction == answer)


def gqa_normalized_match(prediction: str, answer: str) -> float:
    """NOT the official GQA metric: exact match after :func:`normalize_answer` on both sides.

    Useful for free-form generators ("The dog." vs "dog"); report it under its own name.
    """
    return float(normalize_answer(prediction) == normalize_answer(answer))


@dataclass(frozen=True)
class GQABreakdown:
    """GQA accuracy overall, binary vs open, and per structural / semantic type (all in [0, 1])."""

    accuracy: float
    count: int
    binary: float | None
    open: float | None
    per_structural: dict[str, float] = field(default_factory=dict)
    per_semantic: dict[str, float] = field(default_factory=dict)
    counts_structural: dict[str, int] = field(default_factory=dict)
    counts_semantic: dict[str, int] = field(default_factory=dict)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def gqa_breakdown(
    items: Iterable[tuple[str, str, Mapping[str, str]]],
    match: Callable[[str, str], float] = gqa_exact_match,
) -> GQABreakdown:
    """Score ``(prediction, answer, types)`` triples, ``types`` being a GQA record's ``types``.

    Open questions are those with ``types["structural"] == "query"``; all others are binary
    (verify, logical, choose, compare), as in the official evaluation. Pass only balanced
    questions to reproduce the official numbers.
    """
    scores: list[float] = []
    by_kind: dict[str, list[float]] = {"binary": [], "open": []}
    by_structural: dict[str, list[float]] = {}
    by_semantic: dict[str, list[float]] = {}
    for prediction, answer, types in items:
        score = match(prediction, answer)
        scores.append(score)
        structural = types.get("structural", "unknown")
        by_kind["open" if structural == "query" else "binary"].append(score)
        by_structural.setdefault(structural, []).append(score)
        by_semantic.setdefault(types.get("semantic", "unknown"), []).append(score)
    if not scores:
        raise ValueError("gqa_breakdown needs at least one item")
    return GQABreakdown(
        accuracy=sum(scores) / len(scores),
        count=len(scores),
        binary=_mean(by_kind["binary"]),
        open=_mean(by_kind["open"]),
        per_structural={k: sum(v) / len(v) for k, v in sorted(by_structural.items())},
        per_semantic={k: sum(v) / len(v) for k, v in sorted(by_semantic.items())},
        counts_structural={k: len(v) for k, v in sorted(by_structural.items())},
        counts_semantic={k: len(v) for k, v in sorted(by_semantic.items())},
    )


# --------------------------------------------------------------------------------------------
# A-OKVQA
# --------------------------------------------------------------------------------------------


def aokvqa_direct_answer(prediction: str, direct_answers: Sequence[str]) -> float:
    """Official A-OKVQA direct-answer score: ``min(1, #(direct_answers == pred) / 3)``.

    No leave-one-out and the references are used verbatim (official). The official script does
    not normalise the prediction either and leaves that to the user; here a reference counts as
    matched when it equals the lower-cased, whitespace-cleaned prediction or its
    :func:`normalize_answer` form, so that neither "2" nor "two" in the references is missed.
    Questions flagged ``difficult_direct_answer`` are excluded from the DA average (see
    :func:`aokvqa_direct_answer_mean`).
    """
    candidates = {_clean_whitespace(prediction).lower(), normalize_answer(prediction)}
    matches = sum(ref in candidates for ref in direct_answers)
    return min(1.0, matches / 3)


def aokvqa_direct_answer_mean(
    items: Iterable[tuple[str, Sequence[str], bool]],
) -> float:
    """Mean DA score over ``(prediction, direct_answers, difficult_direct_answer)`` triples,
    skipping the difficult ones as the A-OKVQA benchmark prescribes."""
    scores = [aokvqa_direct_answer(p, refs) for p, refs, difficult in items if not difficult]
    if not scores:
        raise ValueError("no A-OKVQA question left after skipping difficult_direct_answer ones")
    return sum(scores) / len(scores)


def aokvqa_multiple_choice(prediction: str, choices: Sequence[str], correct_idx: int) -> float:
    """Official A-OKVQA multiple-choice score: exact match with the correct choice (1.0 / 0.0)."""
    if not 0 <= correct_idx < len(choices):
        raise ValueError(f"correct_idx {correct_idx} is out of range for {len(choices)} choices")
    return float(prediction == choices[correct_idx])


# --------------------------------------------------------------------------------------------
# Grounding (RefCOCO family)
# --------------------------------------------------------------------------------------------


def box_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """IoU of two ``[x1, y1, x2, y2]`` boxes (top-left origin, continuous pixel coordinates).

    A degenerate box (zero or negative width or height) has IoU 0 with anything.
    """
    ax1, ay1, ax2, ay2 = (float(v) for v in a)
    bx1, by1, bx2, by2 = (float(v) for v in b)
    area_a = (ax2 - ax1) * (ay2 - ay1)
    area_b = (bx2 - bx1) * (by2 - by1)
    if ax2 <= ax1 or ay2 <= ay1 or bx2 <= bx1 or by2 <= by1:
        return 0.0
    iw = min(ax2, bx2) - max(ax1, bx1)
    ih = min(ay2, by2) - max(ay1, by1)
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    return inter / (area_a + area_b - inter)


@dataclass(frozen=True)
class GroundingSummary:
    """Grounding scores over n samples, all in [0, 1].

    ``accuracy`` is Acc@threshold (IoU >= threshold, the standard RefCOCO metric); ``mean_iou``
    counts every failure (no box predicted) as IoU 0, unlike the ViperGPT/HYDRA evaluators.
    """

    count: int
    accuracy: float
    mean_iou: float
    failure_rate: float
    threshold: float = 0.5

    @classmethod
    def from_pairs(
        cls,
        pairs: Iterable[tuple[Sequence[float] | None, Sequence[float]]],
        threshold: float = 0.5,
    ) -> GroundingSummary:
        """Summarise ``(predicted_box or None, gt_box)`` pairs, boxes in xyxy."""
        ious: list[float] = []
        failures = 0
        for pred, gt in pairs:
            if pred is None:
                failures += 1
                ious.append(0.0)
            else:
                ious.append(box_iou(pred, gt))
        if not ious:
            raise ValueError("GroundingSummary needs at least one (prediction, gt) pair")
        n = len(ious)
        return cls(
            count=n,
            accuracy=sum(iou >= threshold for iou in ious) / n,
            mean_iou=sum(ious) / n,
            failure_rate=failures / n,
            threshold=threshold,
        )


def summarize_grounding(
    pairs: Iterable[tuple[Sequence[float] | None, Sequence[float]]], threshold: float = 0.5
) -> GroundingSummary:
    """Shorthand for :meth:`GroundingSummary.from_pairs`."""
    return GroundingSummary.from_pairs(pairs, threshold)
