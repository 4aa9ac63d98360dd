"""The agent loop with a scripted LLM and the real tools: snapshots on the labelled photos and questions.

These tests pin behaviour on the labelled real photos and their labelled questions and expressions
(benchmarks/real_photos/questions.jsonl): the tools run on a labelled photo with a labelled question or
expression, and what is expected is what that photo shows (measured colours, text read, places, boxes
drawn by hand). They are snapshots of behaviour on the benchmark's own items, not mechanism tests; the
mechanism tests, with phrasings of their own, are in tests/test_agent_loop.py.
"""

from __future__ import annotations

from hydra_vr.agent.loop import HydraAgent
from hydra_vr.config import AgentConfig
from hydra_vr.eval.metrics import box_iou
from tests.test_agent_loop import RoleScript, code, make_agent, sandbox  # noqa: F401  (sandbox is a fixture)


def test_vipergpt_grounding_patch_of_another_thing_goes_to_the_expressions_own_names(embedded_toolbox, sandbox, photo):
    # asked for a patch, the 1.5B returned the person for "her hat"; find("hat") finds the hat elsewhere
    script = RoleScript(reasoner=[code('final_answer = ImagePatch(image).find("person")[0]')])
    result = make_agent(script, embedded_toolbox, sandbox, mode="vipergpt").run(str(photo("grace_hopper")), "her hat",
                                                                               task="grounding")
    attempts = result.steps[0].attempts
    assert [a.error_kind for a in attempts] == ["off_expression", None] and attempts[-1].fallback
    assert "find('person')" in attempts[0].error and "names 'hat'" in attempts[0].error
    assert len(script.seen["reasoner"]) == 1  # no re-ask: the fallback looks for 'hat' first
    assert box_iou(result.boxes[0], [153, 22, 372, 185]) >= 0.5  # the labelled hat
    # the person for "the woman in uniform" is the thing named: kept, no fallback
    script = RoleScript(reasoner=[code('final_answer = ImagePatch(image).find("person")[0]')])
    result = make_agent(script, embedded_toolbox, sandbox, mode="vipergpt").run(str(photo("grace_hopper")), "the woman in uniform",
                                                                               task="grounding")
    assert [a.error_kind for a in result.steps[0].attempts] == [None] and len(result.boxes) == 1


def test_vipergpt_yes_to_is_anyone_with_no_person_in_the_photo_is_no(embedded_toolbox, sandbox, photo):
    # the program found the motorcycle and said yes; the detector finds no one on the real photo
    body = 'final_answer = bool_to_yesno(bool(ImagePatch(image).find("motorcycle")))'
    result = make_agent(RoleScript(reasoner=[code(body)]), embedded_toolbox, sandbox, mode="vipergpt").run(
        str(photo("motorcycle")), "Is anyone riding the motorcycle?")
    assert result.steps[0].result["final_answer"] == "yes"
    assert result.answer == "no" and 'find("person") found no one' in result.steps[0].observation
    # on the bus photo people are there: nobody_there leaves the program's yes (existence_for_state and
    # presence_unsearched, which refuse a yes resting on the bus's find alone, switched off to see the rewrite alone)
    agent = HydraAgent(AgentConfig(mode="vipergpt"), RoleScript(reasoner=[code(body.replace("motorcycle", "bus"))]).chat,
                       embedded_toolbox, sandbox, disabled_checks=["existence_for_state", "presence_unsearched"])
    result = agent.run(str(photo("bus")), "Is anyone waiting for the bus?")
    assert result.answer == "yes" and not result.checks
