"""``hydra-vr compare`` over real run folders made by ``hydra-vr eval`` with the scripted LLM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_eval_runner import _scripted_config  # tests/ is on sys.path (rootdir conftest, no package)
from typer.testing import CliRunner

from hydra_vr.cli.main import app
from hydra_vr.eval.compare import COLUMNS, compare_runs


def _eval(out: Path, cfg: Path, *args: str) -> None:
    result = CliRunner().invoke(app, ["eval", "--out", str(out), "--config", str(cfg), "--no-progress", *args])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[Path]:
    """easy-VQA in two modes, and a user file mixing a VQA row and a grounding row."""
    root = tmp_path_factory.mktemp("runs")
    cfg = _scripted_config(root / "cfg.yaml")
    _eval(root / "one_step", cfg, "--dataset", "easy-vqa", "--limit", "3", "--mode", "one_step")
    _eval(root / "vipergpt", cfg, "--dataset", "easy-vqa", "--limit", "3", "--mode", "vipergpt")
    user = root / "mine.jsonl"
    user.write_text(json.dumps({"id": "v", "image": "sample:coins", "question": "Is there a circle?", "answers": ["yes", "yep"]})
                    + "\n" + json.dumps({"id": "g", "image": "sample:coins", "question": "the coin", "box": [10, 10, 60, 60]}) + "\n")
    _eval(root / "user", cfg, "--dataset", "user", "--data-root", str(user), "--mode", "one_step")
    run_file = root / "user" / "run.json"
    data = json.loads(run_file.read_text())
    data["settings"]["strategy"] = "tree"  # a setting another issue adds; shown when present
    run_file.write_text(json.dumps(data))
    return [root / "one_step", root / "vipergpt", root / "user"]


def _report(run: Path) -> dict:
    return json.loads((run / "report.json").read_text())


def test_json_rows_are_the_report_figures(runs):
    result = CliRunner().invoke(app, ["compare", *map(str, runs), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["run"] for r in rows] == ["one_step", "vipergpt", "user"]
    assert set(rows[0]) == {k for k, _ in COLUMNS} | {"path"}
    one, viper, user = rows
    assert (one["mode"], viper["mode"], one["dataset"], one["samples"], user["samples"]) == ("one_step", "vipergpt", "easy-vqa", 3, 2)
    assert user["mode"] is None  # HYDRA's --mode means nothing to another strategy: not shown beside it
    # one_step calls the planner besides the reasoner; vipergpt writes one program straight away
    assert one["llm_calls"] > viper["llm_calls"] >= 1
    assert (one["strategy"], user["strategy"]) == ("hydra", "tree")  # beside other strategies, none named = HYDRA
    for row, run in zip(rows, runs):
        report = _report(run)  # written by the eval at the end of the run
        assert row["accuracy"] == report["vqa"]["score"] is not None
        assert row["median_seconds"] == report["cost"]["median_seconds"] > 0
        assert row["llm_calls"] == report["cost"]["calls_per_sample"]
        assert row["llm_calls"] == pytest.approx(report["cost"]["llm_calls"] / row["samples"], abs=1e-3)
        assert row["prompt_tokens"] == report["cost"]["prompt_tokens_per_sample"] > 0
        assert row["type_misfit"] == report["answer_fit"]["share"]
        assert row["errors"] == report["errors"]
    assert one["acc@0.5"] is None and one["vqa_metric"] == "exact_match"
    grounding = _report(runs[2])["grounding"]
    assert (user["acc@0.5"], user["miou"], user["vqa_metric"]) == (grounding["acc@0.5"], grounding["miou"], "answer_match")
    assert grounding["n"] == 1 and _report(runs[2])["vqa"]["n"] == 1


def test_markdown_and_rich_tables(runs):
    md = CliRunner().invoke(app, ["compare", *map(str, runs), "--markdown"])
    assert md.exit_code == 0, md.output
    lines = md.output.strip().splitlines()
    assert lines[0].startswith("| run | dataset | mode | strategy | samples | VQA metric | accuracy | Acc@0.5 | mIoU |")
    assert len(lines) == 2 + len(runs) and lines[2].startswith("| one_step | easy-vqa | one_step | hydra | 3 |")
    table = CliRunner().invoke(app, ["compare", *map(str, runs)], env={"COLUMNS": "250"})
    assert table.exit_code == 0, table.output
    assert "vipergpt" in table.output and "Acc@0.5" in table.output and "tree" in table.output


def test_runs_without_a_strategy_or_grounding_hide_those_columns(runs):
    md = CliRunner().invoke(app, ["compare", str(runs[0]), "--markdown"])
    header = md.output.splitlines()[0]
    assert "strategy" not in header and "Acc@0.5" not in header and "accuracy" in header
    assert compare_runs([runs[0]])[0]["strategy"] is None  # alone, a HYDRA run shows no strategy column
    # --mode vipergpt is the vipergpt strategy: its run says so
    assert compare_runs([runs[0], runs[1]])[1]["strategy"] == "vipergpt"


def test_same_folder_names_are_told_apart_by_path(runs, tmp_path):
    rows = compare_runs([runs[0], runs[0]])
    assert [r["run"] for r in rows] == [str(runs[0])] * 2


def test_a_folder_that_is_not_a_run_is_a_clear_error(runs, tmp_path):
    result = CliRunner().invoke(app, ["compare", str(runs[0]), str(tmp_path)])
    assert result.exit_code == 2 and f"{tmp_path}: not an eval run (no results.jsonl" in result.output
    assert "Traceback" not in result.output
    missing = CliRunner().invoke(app, ["compare", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "not a folder" in missing.output
    both = CliRunner().invoke(app, ["compare", str(runs[0]), "--json", "--markdown"])
    assert both.exit_code == 2 and "choose one of --json and --markdown" in both.output


def test_common_compares_runs_cut_short_on_the_samples_all_finished(runs, tmp_path):
    import shutil

    short = tmp_path / "short"
    shutil.copytree(runs[1], short)  # the vipergpt run, as if stopped after its first sample
    lines = (short / "results.jsonl").read_text().splitlines()
    (short / "results.jsonl").write_text(lines[0] + "\n")
    kept = json.loads(lines[0])["id"]
    plain = compare_runs([runs[0], short])
    assert [r["samples"] for r in plain] == [3, 1]
    both = compare_runs([runs[0], short], common=True)
    assert [r["samples"] for r in both] == [1, 1]
    one_record = next(json.loads(x) for x in (runs[0] / "results.jsonl").read_text().splitlines() if json.loads(x)["id"] == kept)
    assert both[0]["accuracy"] == 100 * one_record["score"]
    result = CliRunner().invoke(app, ["compare", str(runs[0]), str(short), "--common", "--json"])
    assert result.exit_code == 0 and [r["samples"] for r in json.loads(result.output)] == [1, 1]
