"""benchmarks/loop_vs_program.py: why one program beat the loop, on hand-made run folders of its own."""

from __future__ import annotations

import json

from tests.benchmark_scripts import load


def _step(guess, tools=(), step=1):
    return {"step": step, "guess": guess, "result": {"calls": [{"tool": t, "args": {}} for t in tools]}}


def _run(path, rows):
    """A run folder: results.jsonl and one trace per record (``rows``: id, prediction, steps, answer source)."""
    (path / "traces").mkdir(parents=True)
    lines = []
    for qid, prediction, steps, source in rows:
        record = {"id": qid, "dataset": "user", "task": "vqa", "query": "Which tool hangs on the wall?",
                  "gt": {"answers": ["saw"], "answer": "saw"}, "prediction": prediction, "steps": len(steps),
                  "seconds": 10.0 * len(steps) + 5, "llm": {"calls": 1 + 3 * len(steps)}, "trace": f"traces/{qid}.json"}
        (path / "traces" / f"{qid}.json").write_text(json.dumps({"steps": steps, "answer_source": source}))
        lines.append(json.dumps(record))
    (path / "results.jsonl").write_text("\n".join(lines) + "\n")
    return path


def test_each_question_the_program_alone_got_right_falls_in_one_class(tmp_path, capsys):
    mod = load("loop_vs_program")
    program = _run(tmp_path / "program", [(q, "saw", [_step("saw", ["find", "measure"])], "program")
                                          for q in ("a", "b", "c", "d", "e")] + [("f", "hammer", [_step("hammer")], "program")])
    loop = _run(tmp_path / "loop", [
        ("a", "saw", [_step("saw", ["find", "measure"])], "summarizer"),  # both right: no loss
        ("b", "drill", [_step("saw", ["find"]), _step("drill", ["find", "measure"], 2)], "summarizer"),
        ("c", "drill", [_step("drill", ["find"])], "summarizer"),
        ("d", "drill", [_step(None, ["find", "measure"])], "fallback simple_query"),
        ("e", "drill", [_step("drill", ["find", "measure"])], "summarizer"),
        ("f", "saw", [_step("saw", ["find"])], "summarizer"),  # the loop alone right
    ])
    out = mod.compare(program, loop)
    assert out["common"] == 6 and out["program_only"] == 4 and out["loop_only"] == 1
    assert {x["id"]: x["class"] for x in out["losses"]} == {
        "b": "step_right_lost", "c": "operation_unreached", "d": "no_step_answer", "e": "other_answer"}
    assert next(x for x in out["losses"] if x["id"] == "c")["unreached"] == ["measure"]
    assert out["cost"]["loop"]["llm_calls"] > out["cost"]["program"]["llm_calls"]
    assert out["median_ratio"] == 1.0  # medians 15 s and 15 s

    assert mod.main([str(program), str(loop), "--json", str(tmp_path / "out.json")]) == 0
    assert "the program alone right on 4, the loop alone on 1" in capsys.readouterr().out
    assert json.loads((tmp_path / "out.json").read_text())["classes"]["step_right_lost"] == 1
    assert mod.main([str(program), str(tmp_path / "missing")]) == 2
    assert mod.compare(program, loop, {"b", "f"})["classes"]["step_right_lost"] == 1  # --same-as: these questions only
    assert mod.compare(program, loop, {"b", "f"})["common"] == 2


def test_a_failed_first_program_the_fallback_rescued_is_its_own_class(tmp_path, capsys):
    mod = load("loop_vs_program")
    own, fallback = {"code": "x = 1", "ok": False}, {"code": "ask()", "ok": True, "fallback": True}
    first = {"step": 1, "guess": None, "attempts": [own], "result": {"calls": []}}
    program = _run(tmp_path / "program", [
        ("g", "saw", [{**_step("saw", ["simple_query"]), "attempts": [own, fallback]}], "program"),
        ("h", "saw", [{**_step("saw", ["find"]), "attempts": [{"code": "y = 2", "ok": True}]}], "program"),
        ("k", "hammer", [{**_step("hammer", ["simple_query"]), "attempts": [own, fallback]}], "program")])
    loop = _run(tmp_path / "loop", [
        ("g", "drill", [first, _step("drill", ["find"], 2)], "summarizer"),
        ("h", "saw", [{**_step("saw", ["find"]), "attempts": [{"code": "y = 2", "ok": True}]}], "program"),
        ("k", "saw", [first, _step("saw", ["find"], 2)], "summarizer")])
    out = mod.compare(program, loop)
    assert [x["class"] for x in out["losses"]] == ["fallback_answered"]
    assert out["divergence"] == {"same_first_program": 3, "first_program_failed": 2, "program_right_there": 1,
                                 "loop_right_there": 1, "program_fallback_answered_there": 2}
    assert mod.main([str(program), str(loop)]) == 0
    assert "same first program 3; it gave no answer on 2" in capsys.readouterr().out
