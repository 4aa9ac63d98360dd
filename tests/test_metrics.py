"""Official metric definitions, checked against the worked examples in shared/DATASETS.md."""

from __future__ import annotations

import pytest

from hydra_vr.eval.metrics import (
    GroundingSummary,
    any_answer_match,
    aokvqa_direct_answer,
    aokvqa_direct_answer_mean,
    aokvqa_multiple_choice,
    box_iou,
    gqa_breakdown,
    gqa_exact_match,
    gqa_normalized_match,
    normalize_answer,
    summarize_grounding,
    vqa_accuracy,
)


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("The Dog.", "dog"),
        ("2,000", "2000"),
        ("two dogs", "2 dogs"),
        ("t-shirt", "t shirt"),
        ("1.5.", "1.5"),
        ("it's a cat!", "it's cat"),
        ("10:30", "10:30"),
        ("none", "0"),
        # beyond the document: each rule on its own
        ("  yes\n", "yes"),  # whitespace
        ("dont", "don't"),  # contractions table
        ("whats up", "what's up"),
        ("black & white", "black & white"),  # & is kept
        ("x / y", "x y"),  # a slash touching a space is deleted, not spaced
        ("and/or", "and or"),  # ... else replaced by a space
        ("An Apple", "apple"),
        ("Ten", "10"),
    ],
)
def test_normalize_answer(raw: str, normalized: str) -> None:
    assert normalize_answer(raw) == normalized


def test_comma_between_digits_deletes_all_punctuation() -> None:
    # digit-comma-digit anywhere switches every listed mark to deletion (official behaviour)
    assert normalize_answer("1,000 t-shirts") == "1000 tshirts"


def _answers(matching: int, total: int = 10) -> list[str]:
    return ["dog"] * matching + ["cat", "horse", "cow", "bird", "fish", "lion", "bear", "deer", "wolf", "fox"][
        : total - matching
    ]


@pytest.mark.parametrize(("m", "score"), [(0, 0.0), (1, 0.3), (2, 0.6), (3, 0.9), (4, 1.0), (7, 1.0), (10, 1.0)])
def test_vqa_accuracy_leave_one_out_scores(m: int, score: float) -> None:
    assert vqa_accuracy("dog", _answers(m)) == pytest.approx(score)


def test_vqa_accuracy_normalises_prediction_and_answers_when_they_differ() -> None:
    answers = ["two dogs", "2 dogs", "2 Dogs.", "cats", "cats", "cats", "cats", "cats", "cats", "cats"]
    # all three dog spellings normalise to "2 dogs"
    assert vqa_accuracy("Two dogs!", answers) == pytest.approx(0.9)
    assert vqa_accuracy("the cats", answers) == pytest.approx(1.0)


def test_vqa_accuracy_skips_normalisation_when_all_ten_answers_are_identical() -> None:
    answers = ["dog"] * 10
    assert vqa_accuracy("dog", answers) == 1.0
    # normalisation would turn these into "dog"; the official rule leaves them unmatched
    assert vqa_accuracy("Dog", answers) == 0.0
    assert vqa_accuracy("the dog.", answers) == 0.0
    # whitespace is still cleaned in that case
    assert vqa_accuracy(" dog\n", answers) == 1.0
    # one differing answer switches normalisation back on
    assert vqa_accuracy("Dog", ["dog"] * 9 + ["cat"]) == pytest.approx(1.0)


def test_vqa_accuracy_refuses_single_reference() -> None:
    with pytest.raises(ValueError, match="several reference answers"):
        vqa_accuracy("dog", ["dog"])


def test_gqa_exact_match_is_raw_string_equality() -> None:
    assert gqa_exact_match("yes", "yes") == 1.0
    assert gqa_exact_match("Yes", "yes") == 0.0
    assert gqa_exact_match("yes ", "yes") == 0.0
    assert gqa_normalized_match("Yes.", "yes") == 1.0
    assert gqa_normalized_match("the table", "table") == 1.0
    assert gqa_normalized_match("chair", "table") == 0.0


def test_gqa_breakdown_splits_binary_and_open_by_structural_type() -> None:
    items = [
        ("yes", "yes", {"structural": "verify", "semantic": "attr"}),
        ("no", "yes", {"structural": "logical", "semantic": "obj"}),
        ("table", "table", {"structural": "query", "semantic": "cat"}),
        ("chair", "table", {"structural": "query", "semantic": "cat"}),
        ("Table", "table", {"structural": "query", "semantic": "rel"}),
    ]
    b = gqa_breakdown(items)
    assert b.count == 5
    assert b.accuracy == pytest.approx(2 / 5)
    assert b.binary == pytest.approx(1 / 2)
    assert b.open == pytest.approx(1 / 3)
    assert b.per_structural == {"logical": 0.0, "query": pytest.approx(1 / 3), "verify": 1.0}
    assert b.per_semantic == {"attr": 1.0, "cat": 0.5, "obj": 0.0, "rel": 0.0}
    assert b.counts_structural == {"logical": 1, "query": 3, "verify": 1}
    assert gqa_breakdown(items, match=gqa_normalized_match).per_semantic["rel"] == 1.0


def test_gqa_breakdown_without_binary_questions_reports_none() -> None:
    b = gqa_breakdown([("a", "a", {"structural": "query", "semantic": "obj"})])
    assert b.binary is None and b.open == 1.0


def test_any_answer_match_accepts_any_alternative_after_normalisation() -> None:
    assert any_answer_match("two", ["2", "3"]) == 1.0  # VQA accuracy would give 1/6
    assert vqa_accuracy("two", ["2", "3"]) == pytest.approx(1 / 6)
    assert any_answer_match("The Dog.", ["cat", "dog"]) == 1.0
    assert any_answer_match("dogs", ["cat", "dog"]) == 0.0
    assert any_answer_match("dog", []) == 0.0


def test_aokvqa_direct_answer_has_no_leave_one_out() -> None:
    refs = ["cab"] * 3 + ["taxi"] * 2 + ["car"] * 5
    assert aokvqa_direct_answer("cab", refs) == 1.0  # 3 matches (VQA leave-one-out would give 0.9)
    assert aokvqa_direct_answer("taxi", refs) == pytest.approx(2 / 3)
    assert aokvqa_direct_answer("bus", refs) == 0.0
    # the prediction is normalised, the references are not
    assert aokvqa_direct_answer("The Taxi.", refs) == pytest.approx(2 / 3)
    assert aokvqa_direct_answer("taxi", ["Taxi"] * 10) == 0.0
    # a number matches whichever spelling the references use
    assert aokvqa_direct_answer("two", ["2"] * 3) == 1.0
    assert aokvqa_direct_answer("two", ["two"] * 3) == 1.0


def test_aokvqa_direct_answer_mean_skips_difficult_questions() -> None:
    items = [("cab", ["cab"] * 10, False), ("x", ["y"] * 10, True), ("a", ["b"] * 10, False)]
    assert aokvqa_direct_answer_mean(items) == pytest.approx(0.5)


def test_aokvqa_multiple_choice() -> None:
    choices = ["skateboarder", "train", "delivery", "cab"]
    assert aokvqa_multiple_choice("cab", choices, 3) == 1.0
    assert aokvqa_multiple_choice("train", choices, 3) == 0.0
    with pytest.raises(ValueError):
        aokvqa_multiple_choice("cab", choices, 4)


@pytest.mark.parametrize(
    ("a", "b", "iou"),
    [
        ((0, 0, 10, 10), (0, 0, 10, 10), 1.0),
        ((0, 0, 10, 10), (5, 0, 15, 10), 50 / 150),
        ((0, 0, 10, 10), (2, 2, 4, 4), 4 / 100),
        ((0, 0, 10, 10), (10, 0, 20, 10), 0.0),  # touching edges
        ((0, 0, 10, 10), (20, 20, 30, 30), 0.0),
        ((0, 0, 0, 10), (0, 0, 10, 10), 0.0),  # zero width
        ((5, 5, 0, 0), (0, 0, 10, 10), 0.0),  # inverted
        ((0.5, 0.5, 2.5, 2.5), (1.5, 1.5, 3.5, 3.5), 1 / 7),
    ],
)
def test_box_iou(a, b, iou) -> None:
    assert box_iou(a, b) == pytest.approx(iou)
    assert box_iou(b, a) == pytest.approx(iou)


def test_grounding_summary_counts_failures_as_zero_iou() -> None:
    gt = (0.0, 0.0, 10.0, 10.0)
    pairs = [
        ((0, 0, 10, 10), gt),  # IoU 1
        ((0, 0, 10, 5), gt),  # IoU 0.5: counts as correct (>=)
        ((0, 0, 10, 4), gt),  # IoU 0.4
        (None, gt),  # failure
    ]
    s = GroundingSummary.from_pairs(pairs)
    assert s.count == 4
    assert s.accuracy == pytest.approx(2 / 4)
    assert s.mean_iou == pytest.approx((1.0 + 0.5 + 0.4 + 0.0) / 4)
    assert s.failure_rate == pytest.approx(1 / 4)
    assert summarize_grounding(pairs, threshold=0.75).accuracy == pytest.approx(1 / 4)
    with pytest.raises(ValueError):
        summarize_grounding([])
