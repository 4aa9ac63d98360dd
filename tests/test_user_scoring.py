"""User files: packaged sample images, answers as accepted alternatives, per-task report sections,
categories, answer-type fit, and re-scoring stored records (``eval --report-only``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hydra_vr.assets import sample_image
from hydra_vr.cli.main import app
from hydra_vr.datasets import DatasetError, Sample, load_dataset
from hydra_vr.eval.metrics import box_iou, vqa_accuracy
from hydra_vr.eval.report import build_report, render_markdown
from hydra_vr.eval.rescore import rescore_records, rescore_run
from hydra_vr.eval.scoring import metric_family, score_sample


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _sample(answers: list[str], answer: str | None = None) -> Sample:
    return Sample(id="q", image_path=Path("x.png"), query="How many dogs?", task="vqa", answers=answers,
                  answer=answer if answer is not None else answers[0])


# --------------------------------------------------------------------------------------------
# Loading: sample:NAME images
# --------------------------------------------------------------------------------------------


def test_user_image_can_be_a_packaged_sample_photo(tmp_path):
    path = _write_jsonl(tmp_path / "mine.jsonl", [
        {"image": "sample:chelsea", "question": "Which animal is lying here?", "answers": ["cat", "kitten"]},
        {"image": "local.png", "question": "the cat", "box": [1, 2, 3, 4]},
    ])
    cat, local = load_dataset("user", path)
    assert cat.image_path == sample_image("chelsea") and cat.image_path.is_file()
    assert cat.load_image().size == (451, 300)  # the real scikit-image photo
    assert local.image_path == tmp_path / "local.png"  # plain paths stay relative to the file


def test_unknown_sample_image_is_a_clear_error(tmp_path):
    path = _write_jsonl(tmp_path / "bad.jsonl", [{"image": "sample:unicorn", "question": "q"}])
    with pytest.raises(DatasetError, match=r"bad\.jsonl: line 1: image 'sample:unicorn': unknown sample image 'unicorn'; choose from .*chelsea"):
        load_dataset("user", path)


# --------------------------------------------------------------------------------------------
# Scoring: alternatives, one family table
# --------------------------------------------------------------------------------------------


def test_metric_family_table():
    assert {d: metric_family(d) for d in ("user", "okvqa", "OK-VQA", "vqav2", "aokvqa", "gqa", "easy_vqa",
                                           "refcoco+", "refcocog-umd", "mine")} == {
        "user": "any", "okvqa": "vqa", "OK-VQA": "vqa", "vqav2": "vqa", "aokvqa": "aokvqa", "gqa": "gqa",
        "easy_vqa": "exact", "refcoco+": "grounding", "refcocog-umd": "grounding", "mine": "auto"}


@pytest.mark.parametrize(("prediction", "score"), [("two", 1.0), ("2", 1.0), ("Two.", 1.0), ("3", 0.0), ("", 0.0)])
def test_user_vqa_scores_one_when_any_alternative_matches(prediction, score):
    scores = score_sample(_sample(["2", "two"]), prediction, [], "user")
    assert (scores.metric, scores.score, scores.scores) == ("answer_match", score, {"answer_match": score})


def test_user_answer_column_is_accepted_beside_answers():
    scores = score_sample(_sample(["puppy"], answer="dog"), "a dog", [], "user")
    assert scores.score == 1.0


def test_benchmarks_keep_their_official_metrics():
    sample = _sample(["2", "two"])
    okvqa = score_sample(sample, "two", [], "okvqa")
    assert okvqa.metric == "vqa_accuracy" and okvqa.score == vqa_accuracy("two", ["2", "two"]) < 1.0
    assert score_sample(sample, "two", [], "gqa").scores == {"exact_match": 0.0, "normalized_match": 1.0}


def test_user_file_rows_score_through_the_loader(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("image,question,answers,choices,correct_choice\n"
                    "a.png,How many dogs?,2|two,,\n"
                    "a.png,Which pet?,,cat|dog,1\n")
    count, pet = load_dataset("user", path)
    assert count.answer == "2"  # alternatives, not votes: the first listed is the main answer
    assert score_sample(count, "two", [], "user").score == 1.0
    mc = score_sample(pet, "the dog", [], "user")
    assert (mc.score, mc.choice, mc.scores["multiple_choice"]) == (None, "dog", 1.0)


# --------------------------------------------------------------------------------------------
# Report: each task with its own metric, categories, answer fit, seconds
# --------------------------------------------------------------------------------------------


def _record(rid: str, query: str, gt: dict, *, task: str = "vqa", prediction: str | None = None,
            boxes: list | None = None, category: str | None = None, seconds: float = 1.0, **extra) -> dict:
    """A record as the eval writes it, scored below by the real scorer."""
    return {"id": rid, "dataset": "user", "task": task, "query": query, "image": "a.png", "gt": gt,
            "meta": {"category": category} if category else {}, "mode": "one_step", "prediction": prediction,
            "boxes": boxes or [], "steps": 1, "seconds": seconds, "wall_seconds": seconds,
            "llm": {"calls": 2, "prompt_tokens": 100, "completion_tokens": 10}, "error": None, "crashed": False, **extra}


def _mixed_records() -> list[dict]:
    gt_box = [0.0, 0.0, 10.0, 10.0]
    records = [
        _record("v1", "How many dogs?", {"answers": ["2", "two"], "answer": "2"}, prediction="two", category="count", seconds=1.0),
        _record("v2", "How many cats?", {"answers": ["3"], "answer": "3"}, prediction="red", category="count", seconds=2.0),
        _record("v3", "What color is the van?", {"answers": ["red"], "answer": "red"}, prediction="red", category="color", seconds=3.0),
        _record("g1", "the dog", {"box": gt_box}, task="grounding", boxes=[[0.0, 0.0, 10.0, 8.0]], category="count", seconds=4.0),
        _record("g2", "the cat", {"box": gt_box}, task="grounding", boxes=[[5.0, 5.0, 15.0, 15.0]], seconds=10.0),
    ]
    return rescore_records(records).records


def test_mixed_report_scores_each_task_over_its_own_rows():
    report = build_report(_mixed_records())
    assert report["vqa"] == {"n": 3, "n_scored": 3, "metric": "answer_match", "score": round(100 * 2 / 3, 2)}
    assert (report["main_metric"], report["score"]) == ("answer_match", round(100 * 2 / 3, 2))
    assert report["metrics"] == {"answer_match": {"score": round(100 * 2 / 3, 2), "n": 3}}  # no grounding names
    iou2 = box_iou([5, 5, 15, 15], [0, 0, 10, 10])
    assert report["grounding"] == {"acc@0.5": 50.0, "miou": round(100 * (0.8 + iou2) / 2, 2), "failure_rate": 0.0, "n": 2}
    # category: each row's own main score (VQA match or Acc@0.5 hit); g2 has no category
    assert report["breakdowns"]["category"] == {"color": {"score": 100.0, "n": 1}, "count": {"score": round(200 / 3, 2), "n": 3}}
    cost = report["cost"]
    assert (cost["median_seconds"], cost["mean_seconds"]) == (3.0, 4.0)
    assert (cost["calls_per_sample"], cost["prompt_tokens_per_sample"], cost["completion_tokens_per_sample"]) == (2.0, 100.0, 10.0)

    md = render_markdown(report)
    assert md.count("acc@0.5") == 1 and "## VQA (3 rows, x100)" in md and "## Grounding (2 rows, x100)" in md
    assert "## By category" in md


def test_answer_type_fit_is_computed_from_the_stored_question():
    fit = build_report(_mixed_records())["answer_fit"]
    # "How many cats?" answered "red" does not fit; a grounding row is not an answer
    assert (fit["n"], fit["misfit"], fit["share"]) == (3, 1, round(100 / 3, 2))
    assert fit["by_kind"] == {"color": {"n": 1, "misfit": 0, "share": 0.0}, "number": {"n": 2, "misfit": 1, "share": 50.0}}
    assert fit["examples"][0]["id"] == "v2" and "'red'" in fit["examples"][0]["reason"]


def test_answer_fit_uses_stored_choices_and_skips_crashed_rows():
    records = rescore_records([
        _record("c1", "Which pet is shown?", {"choices": ["cat", "dog"], "correct_choice": 0}, prediction="a parrot"),
        _record("c2", "Which pet is shown?", {"choices": ["cat", "dog"], "correct_choice": 0}, prediction="cat"),
        _record("x", "How many?", {"answers": ["1"]}, crashed=True, error="RuntimeError: boom"),
    ]).records
    fit = build_report(records)["answer_fit"]
    assert fit["by_kind"] == {"choice": {"n": 2, "misfit": 1, "share": 50.0}}


# --------------------------------------------------------------------------------------------
# Re-scoring stored records
# --------------------------------------------------------------------------------------------


def _old_record() -> dict:
    """A user record as the scorer before alternatives wrote it: two answers weighed as VQA votes."""
    return {"id": "old1", "task": "vqa", "query": "How many dogs?", "image": "a.png",
            "gt": {"answers": ["2", "3"], "answer": "2"}, "meta": {}, "mode": "no_rl", "prediction": "two",
            "boxes": [], "choice": None, "metric": "vqa_accuracy", "score": vqa_accuracy("two", ["2", "3"]),
            "scores": {"vqa_accuracy": vqa_accuracy("two", ["2", "3"])}, "steps": 2, "seconds": 1.5,
            "llm": {"calls": 3, "prompt_tokens": 300, "completion_tokens": 30}, "error": None, "crashed": False,
            "trace": None}  # no "dataset" and no "wall_seconds": older records lack them


def test_rescore_old_style_record():
    old = _old_record()
    assert round(old["score"], 2) == 0.17
    outcome = rescore_records([old, {"id": "no-gt", "prediction": "x"}], dataset="user")
    new, kept = outcome.records
    assert (outcome.changed, outcome.skipped) == (1, 1)
    assert (new["metric"], new["score"], new["scores"]) == ("answer_match", 1.0, {"answer_match": 1.0})
    assert kept == {"id": "no-gt", "prediction": "x"} and old["score"] < 1  # the input is not modified


def test_rescore_crashed_record_stays_wrong():
    crashed = {**_old_record(), "prediction": None, "crashed": True, "error": "FileNotFoundError: a.png",
               "score": 0.0, "scores": {"vqa_accuracy": 0.0}}
    (new,) = rescore_records([crashed], dataset="user").records
    assert (new["metric"], new["score"]) == ("answer_match", 0.0)


def test_report_only_rescores_an_old_run_on_disk(tmp_path):
    run = tmp_path / "old-run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"settings": {"dataset": "user", "mode": "no_rl"}, "previous": []}))
    (run / "results.jsonl").write_text(json.dumps(_old_record()) + "\n")
    result = CliRunner().invoke(app, ["eval", "--out", str(run), "--report-only"])
    assert result.exit_code == 0, result.output
    assert "re-scored 1 record(s) with the current scorer" in result.output
    (stored,) = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert (stored["metric"], stored["score"], stored["prediction"], stored["steps"]) == ("answer_match", 1.0, "two", 2)
    report = json.loads((run / "report.json").read_text())
    assert (report["score"], report["main_metric"], report["cost"]["mean_seconds"]) == (100.0, "answer_match", 1.5)
    assert rescore_run(run).changed == 0  # already current: the file is left as it is
