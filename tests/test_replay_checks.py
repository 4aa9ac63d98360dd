"""benchmarks/replay_checks.py and the tool calls a trace keeps: checks run again on a stored run, offline."""

from __future__ import annotations

import json
from pathlib import Path

from tests.benchmark_scripts import load

from hydra_vr.api.types import Answer, Box, Detection, ToolCallRecord

def _module():
    return load("replay_checks")


def test_a_tool_call_survives_the_trace_json():
    det = Detection(Box(1, 2, 30, 40), "kettle", 0.87654, "nanodet", query="kettle")
    calls = [ToolCallRecord("find", {"name": "kettle"}, [det], 12.34, {"unsearchable": False, "mapping": "class kettle"}),
             ToolCallRecord("simple_query", {"question": "Is it steaming?"}, Answer("yes", "describe", "steam seen"), 3.0),
             ToolCallRecord("compute_depth", {"box": [1, 2, 3, 4]}, 0.25, 1.0)]
    back = [ToolCallRecord.from_dict(json.loads(json.dumps(c.to_dict()))) for c in calls]
    assert back[0].result[0].label == "kettle" and back[0].result[0].box.to_list() == [1.0, 2.0, 30.0, 40.0]
    assert back[0].meta == {"unsearchable": False, "mapping": "class kettle"}
    assert back[1].result == Answer("yes", "describe", "steam seen") and back[2].result == 0.25


def _write_run(folder: Path, samples: list[tuple[str, str, float, list[ToolCallRecord]]]) -> Path:
    (folder / "traces").mkdir(parents=True)
    lines = []
    for i, (query, prediction, score, calls) in enumerate(samples):
        trace = {"query": query, "steps": [{"code": "...", "result": {"calls": [c.to_dict() for c in calls]}}]}
        (folder / "traces" / f"s{i}.json").write_text(json.dumps(trace), encoding="utf-8")
        lines.append(json.dumps({"id": f"s{i}", "task": "vqa", "query": query, "prediction": prediction, "score": score,
                                 "trace": f"traces/s{i}.json", "gt": {}}))
    (folder / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_each_check_is_replayed_on_the_final_answers(tmp_path, capsys):
    mod = _module()
    plate = ToolCallRecord("find", {"name": "plate"}, [Detection(Box(0, 0, 9, 9), "plate", 0.9, "t")], 1.0)
    run = _write_run(tmp_path / "run", [
        ("Is there a spoon on the plate?", "yes", 0.0, [plate]),  # nothing looked for a spoon: fires, on a wrong answer
        ("Is there a plate?", "yes", 1.0, [plate]),  # looked: does not fire
        ("How many forks are there?", "1", 1.0, [plate]),  # a count: presence_unsearched does not apply
    ])
    rows, unstored = mod.replay_run(run)
    fired = [(r["id"], r["check"]) for r in rows if r["fired"]]
    assert ("s0", "presence_unsearched") in fired and all(i != "s1" for i, _ in fired) and unstored == 0
    assert not any(r["check"] == "presence_unsearched" for r in rows if r["id"] == "s2")
    assert mod.main([str(run)]) == 0
    out = capsys.readouterr().out
    assert "| presence_unsearched | 2 | 1 | 0 | 1 |" in out
    assert mod.main([str(tmp_path / "nowhere")]) == 2


def test_a_run_is_scored_as_if_a_check_were_off(tmp_path, capsys):
    # deterministic up to the first firing: without the check the episode ends on the answer it refused first
    mod = _module()
    run = tmp_path / "run"
    (run / "traces").mkdir(parents=True)
    samples = [("s0", "yes", 1.0, ["yes"], [{"check": "presence_unsearched", "answer": "no", "reason": "..."}]),
               ("s1", "no", 0.0, ["yes"], [{"check": "presence_unsearched", "answer": "yes", "reason": "..."}]),
               ("s2", "red", 1.0, ["red"], [])]
    lines = []
    for sid, prediction, score, answers, checks in samples:
        (run / "traces" / f"{sid}.json").write_text(json.dumps({"checks": checks, "steps": []}), encoding="utf-8")
        lines.append(json.dumps({"id": sid, "task": "vqa", "dataset": "user", "query": "Is there a vase?", "prediction": prediction,
                                 "score": score, "gt": {"answers": answers}, "trace": f"traces/{sid}.json"}))
    (run / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    got = mod.without_check(run, "presence_unsearched")
    assert got == {"run": str(run), "vqa": 3, "fired": 2, "with": 66.7, "without": 66.7}
    assert mod.main([str(run), "--without", "presence_unsearched"]) == 0
    assert "fired on 2: accuracy 66.7 with it, 66.7 without it" in capsys.readouterr().out
