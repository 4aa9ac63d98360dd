"""benchmarks/affected.py: the questions a change can reach, and a before/after from rerunning only those."""

from __future__ import annotations

import json

from tests.benchmark_scripts import load


def _run(path, rows):
    """A run folder; ``rows``: (id, query, prediction, score, calls as (tool, args))."""
    (path / "traces").mkdir(parents=True)
    lines = []
    for qid, query, prediction, score, calls in rows:
        trace = {"steps": [{"step": 1, "result": {"calls": [{"tool": t, "args": a, "result": {}} for t, a in calls]}}]}
        (path / "traces" / f"{qid}.json").write_text(json.dumps(trace))
        lines.append(json.dumps({"id": qid, "query": query, "prediction": prediction, "score": score,
                                 "trace": f"traces/{qid}.json"}))
    (path / "results.jsonl").write_text("\n".join(lines) + "\n")
    return path


def test_ids_are_those_whose_calls_the_change_reaches(tmp_path, capsys):
    mod = load("affected")
    run = _run(tmp_path / "a", [
        ("kettle", "Which colour is the kettle?", "red", 1.0, [("find", {"name": "kettle"}),
                                                               ("simple_query", {"question": "Which colour is the kettle?"})]),
        ("lamps", "How many lamps are lit?", "2", 0.0, [("simple_query", {"question": "How many lamps are lit?"})]),
        ("mug", "Is the mug empty?", "no", 1.0, [("simple_query", {"question": "What colour is the mug?"})]),
        ("sign", "What does the sign say?", "stop", 1.0, [("read_text", {})]),
    ])
    assert mod.reached(run, "simple_query") == ["kettle", "lamps", "mug"]
    assert mod.reached(run, "simple_query", "color") == ["kettle", "mug"]  # the call's own question decides
    assert mod.reached(run, "read_text", "open") == ["sign"]  # no question of its own: the sample's
    assert mod.reached(run, "find", "number") == []
    mod.main(["ids", str(run), str(run), "--tool", "simple_query", "--kind", "color"])
    assert capsys.readouterr().out.split() == ["kettle", "mug"]


def test_merge_puts_the_rerun_rows_in_place(tmp_path, capsys):
    mod = load("affected")
    before = _run(tmp_path / "before", [(q, "q?", p, s, []) for q, p, s in
                                        [("a", "red", 1.0), ("b", "blue", 0.0), ("c", "green", 0.0), ("d", "gray", 1.0)]])
    rerun = _run(tmp_path / "rerun", [("b", "q?", "teal", 1.0, []), ("d", "white", "white", 0.0, []),
                                      ("c", "q?", "green", 0.0, []), ("zz", "q?", "x", 1.0, [])])  # zz: not in before
    m = mod.merge(before, rerun)
    assert (m["n"], m["before"], m["after"]) == (4, 50.0, 50.0)
    assert (m["rerun"], m["changed"], m["gained"], m["lost"]) == (3, 2, 1, 1)
    mod.main(["merge", str(before), str(rerun)])
    assert "before 50.00 after 50.00; rerun 3: 2 answers changed, +1 -1" in capsys.readouterr().out


def test_several_patches_finds_the_grounding_programs_that_answered_with_a_list(tmp_path, capsys):
    mod = load("affected")
    run = tmp_path / "g"
    (run / "traces").mkdir(parents=True)
    answers = {"two": [{"box": [0, 0, 5, 5]}, {"box": [9, 9, 20, 20]}], "one": [{"box": [0, 0, 5, 5]}],
               "patch": {"box": [1, 1, 4, 4]}, "text": "lamp"}
    lines = []
    for qid, answer in answers.items():
        trace = {"steps": [{"step": 1, "result": {"final_answer": None}}, {"step": 2, "result": {"final_answer": answer}}]}
        (run / "traces" / f"{qid}.json").write_text(json.dumps(trace))
        lines.append(json.dumps({"id": qid, "query": "the lamp", "boxes": [[0, 0, 5, 5]], "score": 0.0, "trace": f"traces/{qid}.json"}))
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")
    assert mod.several_patches(run) == ["two"]
    mod.main(["ids", str(run), "--several-patches"])
    assert capsys.readouterr().out.split() == ["two"]
    # a grounding rerun that moved the box is an answer changed (its prediction is None)
    moved = tmp_path / "moved"
    (moved / "traces").mkdir(parents=True)
    (moved / "results.jsonl").write_text(json.dumps({"id": "two", "boxes": [[9, 9, 20, 20]], "score": 1.0, "trace": ""}) + "\n")
    m = mod.merge(run, moved)
    assert (m["changed"], m["gained"], m["after"]) == (1, 1, 25.0)


def test_unfound_finds_the_grounding_episodes_whose_whole_question_step_found_nothing(tmp_path, capsys):
    from hydra_vr.agent.strategies.hydra import WHOLE_QUERY

    mod = load("affected")
    run = tmp_path / "u"
    (run / "traces").mkdir(parents=True)
    first = {"nothing": (WHOLE_QUERY, [], True), "boxed": (WHOLE_QUERY, [[1, 1, 5, 5]], False),
             "planned": ("Find the kite", [], True), "unrun": (WHOLE_QUERY, [], False)}
    lines = []
    for qid, (action, boxes, fell_back) in first.items():
        steps = [{"step": 1, "action": action, "boxes": boxes, "attempts": [{"code": "x", "fallback": fell_back}]}]
        (run / "traces" / f"{qid}.json").write_text(json.dumps({"task": "grounding", "steps": steps}))
        lines.append(json.dumps({"id": qid, "query": "the kite", "boxes": boxes, "score": 0.0, "trace": f"traces/{qid}.json"}))
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")
    assert mod.unfound(run) == ["nothing"]
    mod.main(["ids", str(run), "--unfound"])
    assert capsys.readouterr().out.split() == ["nothing"]
