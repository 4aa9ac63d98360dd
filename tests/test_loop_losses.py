"""benchmarks/loop_losses.py: the loss classes of recorded episodes, on hand-made episodes of its own."""

from __future__ import annotations

import json

from tests.benchmark_scripts import load

def _module():
    return load("loop_losses")


def _outcome(answer, decision="answer", final=True):
    return {"recorded": True, "answer": answer, "decision": decision, "final": final, "boxes": []}


def _episode(result, steps, truth="kiwi"):
    return {"id": "e", "dataset": "easy-vqa", "task": "vqa", "query": "Which fruit is in the bowl?",
            "gt": {"answers": [truth], "answer": truth}, "result": {"answer": result, "boxes": []},
            "steps": [{"rounds": [{"choice": choice}], "outcomes": outcomes} for choice, outcomes in steps]}


def test_each_wrong_episode_falls_in_one_loss_class(tmp_path, capsys):
    mod = _module()
    right = _episode("kiwi", [(0, [_outcome("kiwi"), _outcome("kiwi")])])
    passed = _episode("plum", [(1, [_outcome("kiwi"), _outcome("plum")])])
    onward = _episode("plum", [(0, [_outcome("kiwi", "continue", False)]), (0, [_outcome("plum")])])
    never = _episode("plum", [(0, [_outcome("plum"), _outcome("fig")])])
    verdicts = [mod.classify(e)["verdict"] for e in (right, passed, onward, never)]
    assert verdicts == ["right", "passed_over", "continued_past", "never_right"]
    assert mod.classify(right)["steps_without_choice"] == 1 and mod.classify(never)["steps_without_choice"] == 0

    path = tmp_path / "episodes.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in (right, passed, onward, never)) + "\n{\"cut off", encoding="utf-8")
    assert mod.main([str(path)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["loop_accuracy"] == 25.0 and summary["oracle_accuracy"] == 50.0
    assert summary["losses"] == {"passed_over": 1, "continued_past": 1, "never_right": 1}
    assert mod.main([str(tmp_path / "missing.jsonl")]) == 2


def test_what_the_whole_question_option_gave_where_it_was_offered(tmp_path, capsys):
    mod = _module()
    from hydra_vr.agent.strategies.hydra import WHOLE_QUERY

    def offered(result, outcomes, choice=0):
        episode = _episode(result, [(choice, outcomes)])
        episode["steps"][0]["rounds"][0]["options"] = [{"instruction": WHOLE_QUERY}, {"instruction": "Look in the bowl"}]
        return episode

    kept = offered("kiwi", [_outcome("kiwi"), _outcome("plum")])  # it ended right
    beaten = offered("plum", [_outcome("plum"), _outcome("kiwi")])  # it ended wrong, the other option right
    failed = offered("kiwi", [_outcome(None, "continue", False), _outcome("kiwi")], choice=1)  # it gave no answer
    plain = _episode("kiwi", [(0, [_outcome("kiwi")])])  # not offered
    assert mod.classify(plain)["whole"] is None
    assert mod.classify(beaten)["whole"] == {"ended": True, "right": False, "another_right": True}
    path = tmp_path / "episodes.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in (kept, beaten, failed, plain)) + "\n", encoding="utf-8")
    assert mod.main([str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["whole_question_option"] == {
        "offered": 3, "ended": 2, "right": 1, "another_option_right_where_it_was_not": 2}
