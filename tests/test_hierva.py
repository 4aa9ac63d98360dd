"""HierVA: task validation and re-ask, scoped workers, crop chaining, the draft dropped, ablations, peak tokens.

A scripted LLM (routed by system prompt and request) on the real sandbox with the real embedded
vision tools; one end-to-end run on the real 0.5B GGUF (marker ``llm``).
"""

from __future__ import annotations

import importlib.util
import json
import re

import pytest

from hydra_vr.agent.loop import HydraAgent
from hydra_vr.agent.peak_tokens import PEAK_KEY, PeakTokenRecorder
from hydra_vr.agent.strategies.hierva.task import TaskError, TaskRules, parse_task
from hydra_vr.agent.strategies.hierva.worker import ImageRef, scope_code
from hydra_vr.config import AgentConfig
from hydra_vr.llm.scripted import ScriptedChat
from hydra_vr.sandbox import Sandbox

QUESTION = "How many cups can be seen?"
DRAFT = "DRAFT-7f3: zoom into the left half, then the top of it, then count the cups there"
PLAN = ["Crop the left half", "Crop the top half of that crop", "Count the cups in the crop"]
CODE = {
    PLAN[0]: "final_answer = image_patch.crop(0, 0, image_patch.width / 2, image_patch.height)",
    PLAN[1]: "top = image_patch.crop(0, 0, image_patch.width, image_patch.height / 2)\nfinal_answer = top",
    PLAN[2]: 'cups = ImagePatch(image).find("cup")\nfinal_answer = str(len(cups))',
    "Find the cup": 'cups = image_patch.find("cup")\nfinal_answer = cups[0] if cups else image_patch',
    "Count the towers": 'towers = image_patch.find("tower")\nfinal_answer = str(len(towers))',
    "Find the saucer": 'saucers = image_patch.find("saucer")\nfinal_answer = saucers[0] if saucers else None',
}


def task(worker_id: int, image_index: int, instruction: str, expected: str = "text", skills: list[str] | None = None,
         tools: list[str] | None = None) -> str:
    return json.dumps({"worker_id": worker_id, "image_index": image_index, "instruction": instruction, "known_facts": [],
                       "tools": tools if tools is not None else (["zoom", "code"] if expected == "image" else ["code"]),
                       "skills": skills or [], "expected_output": expected})


CHAIN = [task(1, 0, PLAN[0], "image", ["locate_and_crop"]), task(2, 1, PLAN[1], "image"), task(3, 2, PLAN[2], "text", ["count"])]


class Script:
    """The manager and the workers, told apart by their system prompts; ``tasks`` are replied in order."""

    def __init__(self, tasks: list[str], final: str = '{"answer": "1"}', plan: list[str] | None = None) -> None:
        self.tasks, self.final, self.plan = list(tasks), final, plan or PLAN
        self.llm = ScriptedChat(rule=self.reply)

    def reply(self, messages) -> str:
        system, user = messages[0].content, messages[-1].content
        if system.startswith("You are the manager"):
            if "Stage 1, draft" in user:
                return DRAFT
            if "Stage 2" in user:
                return json.dumps({"steps": self.plan})
            if "Is there a next task?" in user:
                return json.dumps({"next": "yes" if self.tasks else "no"})
            if "Write the task for worker" in user or "That task is invalid" in user:
                return self.tasks.pop(0)
            if "Give the final answer" in user or "does not fit" in user:
                return self.final
        if system.startswith("You are a worker"):
            instruction = re.search(r"^Instruction: (.*)$", user, re.M).group(1)
            return f"```python\n{CODE[instruction]}\n```"
        raise AssertionError(f"unscripted call: {user[-200:]!r}")

    def calls(self, who: str):
        return [c for c in self.llm.calls if c.messages[0].content.startswith(f"You are {who}")]


@pytest.fixture(scope="module")
def sandbox(embedded_toolbox):
    with Sandbox(embedded_toolbox, timeout_s=15) as sb:
        yield sb


def run(script: Script, toolbox, sandbox, image, query: str = QUESTION, task_kind: str = "vqa", **options):
    config = AgentConfig.model_validate({"strategy": "hierva", "max_code_retries": 0, "hierva": options})
    agent = HydraAgent(config, script.llm, toolbox, sandbox)
    return agent.run(str(image), query, task=task_kind), agent


# ------------------------------------------------------------------------------------------ tasks
RULES = TaskRules(worker_id=2, images=[0, 1], skills=["count", "locate_and_crop"], outputs=["text", "image"], earlier=["Crop the left half"])


def test_task_validation_names_every_problem():
    ok = parse_task(task(2, 1, "Count the cups", skills=["count"]), RULES)
    assert ok.image_index == 1 and ok.skills == ["count"]
    with pytest.raises(TaskError) as bad:
        parse_task(json.dumps({"worker_id": 3, "image_index": 4, "instruction": "crop the left half.", "known_facts": [],
                               "tools": ["code"], "skills": ["juggle"], "expected_output": "image"}), RULES)
    lines = str(bad.value).splitlines()
    assert lines == ["worker_id is 3, but the next worker is 2", "image_index 4 does not exist; the images are 0, 1",
                     "instruction 'crop the left half.' was already given to a worker; write the next sub-task",
                     "unknown skill(s) 'juggle'; allowed: count, locate_and_crop",
                     'expected_output "image" needs the tool "zoom" (a crop is made by zooming)']
    with pytest.raises(TaskError, match="expected_output 'box' is not allowed here; use one of text, image"):
        parse_task(task(2, 0, "Find the cup", "box"), RULES)
    with pytest.raises(TaskError, match="expected_output: Input should be 'text', 'image' or 'box'"):
        parse_task(task(2, 0, "Find the cup", "number"), RULES)
    with pytest.raises(TaskError, match="not a JSON object"):
        parse_task("worker 2 should count", RULES)
    with pytest.raises(TaskError, match="instruction is empty"):
        parse_task(task(2, 0, "  "), RULES)


def test_scope_code_binds_the_one_image():
    crop = ImageRef.crop(2, [0, 0, 300, 200], None)
    code = scope_code('p = ImagePatch(image)\nfinal_answer = str(len(p.find("cup")))', crop)
    assert code.splitlines()[:2] == ["final_answer = None", "image_patch = crop_2"]
    assert "ImagePatch(image)" not in code
    assert "ImagePatch(image)" in scope_code("x = 1", ImageRef.whole(600, 400))


def test_invalid_task_is_reasked_with_the_precise_error(embedded_toolbox, sandbox, photo):
    bad = task(1, 3, PLAN[0], "image", ["locate_and_crop"])  # no image 3 yet
    script = Script([bad, CHAIN[0], CHAIN[1], CHAIN[2]])
    result, _ = run(script, embedded_toolbox, sandbox, photo("coffee"))
    assert result.ok, result.error
    reask = [c for c in script.calls("the manager") if "That task is invalid" in c.last_user]
    assert len(reask) == 1 and "image_index 3 does not exist; the images are 0" in reask[0].last_user
    first = next(s for s in result.steps if s.action.startswith("task 1"))
    assert first.extra["errors"] == ["image_index 3 does not exist; the images are 0"]
    assert first.extra["task"]["image_index"] == 0


def test_task_reasks_are_bounded_and_the_answer_stays_typed(embedded_toolbox, sandbox, photo):
    bad = task(1, 9, PLAN[0], "image")
    script = Script([bad] * 5, final='{"answer": "not found"}')
    result, _ = run(script, embedded_toolbox, sandbox, photo("coffee"), max_task_retries=2)
    assert len([c for c in script.calls("the manager") if "Write the task" in c.last_user or "invalid" in c.last_user]) == 3
    assert script.tasks == [bad, bad]  # two replies never asked for
    stop = next(s for s in result.steps if s.decision == "stop")
    assert len(stop.extra["errors"]) == 3 and not [s for s in result.steps if s.role == "worker"]
    assert result.answer != "not found"  # a failure string is never final: the whole-image fallback ran
    assert result.answer_source == "fallback simple_query" and result.steps[-1].action == "(fallback) ask the whole image"


def test_a_failure_string_is_never_the_final_answer(embedded_toolbox, sandbox, photo):
    script = Script(list(CHAIN), final='{"answer": "not found"}')
    result, _ = run(script, embedded_toolbox, sandbox, photo("coffee"))
    refused = [c for c in script.calls("the manager") if "does not fit" in c.last_user]
    assert len(refused) == 1 and "reports a failure" in refused[0].last_user
    counted = [s for s in result.steps if s.role == "worker"][-1].guess
    assert counted is not None and result.answer == counted and result.answer_source == "typed guess"


# ------------------------------------------------------------------------------- the main loop
@pytest.fixture(scope="module")
def chained(embedded_toolbox, sandbox, photo):
    script = Script(list(CHAIN))
    result, agent = run(script, embedded_toolbox, sandbox, photo("coffee"))
    assert result.ok, result.error
    return script, result, agent


def test_crops_chain_and_each_worker_sees_one_image(chained):
    script, result, _ = chained
    workers = [s for s in result.steps if s.role == "worker"]
    assert [s.depth for s in workers] == [1, 1, 1] and [s.extra["image_index"] for s in workers] == [0, 1, 2]
    assert [s.extra["made_image"] for s in workers] == [1, 2, None]
    assert workers[1].code.splitlines()[1] == "image_patch = crop_1"
    assert workers[2].code.splitlines()[1] == "image_patch = crop_2"
    # crop 2 is the top half of crop 1 (the left half): zooms chain in original-image pixels
    assert workers[0].boxes == [[0.0, 0.0, 300.0, 400.0]] and workers[1].boxes == [[0.0, 0.0, 300.0, 200.0]]
    # the third worker's ImagePatch(image) was bound to its crop: the cup it found lies inside crop 2
    cups = next(v for v in workers[2].result["variables"] if v["name"] == "cups")
    for x1, y1, x2, y2 in cups["boxes"]:
        assert x2 <= 300.5 and y2 <= 200.5
    assert workers[2].extra["summary"] == f"Worker 3 (image 2): {PLAN[2]} -> {len(cups['boxes'])}"
    assert result.answer == "1" and result.answer_source == "manager"


def test_worker_prompt_is_scoped(chained):
    script, _, _ = chained
    prompts = [c.last_user for c in script.calls("a worker")]
    assert len(prompts) == 3
    for i, prompt in enumerate(prompts):
        assert len(re.findall(r"\bimage \d+:", prompt)) == 1  # exactly one image reference
        assert f"Image: image {i}:" in prompt
        assert QUESTION not in prompt and "Worker " not in prompt
        for j, other in enumerate(PLAN):  # no other worker's instruction or program
            assert j == i or (other not in prompt and CODE[other] not in prompt)
    assert "# locate_and_crop" in prompts[0] and "# count" not in prompts[0]
    assert "# count" in prompts[2] and "Skills:" not in prompts[1]


def test_manager_keeps_the_plan_and_one_line_per_worker_but_not_the_draft(chained):
    script, result, _ = chained
    manager = script.calls("the manager")
    plan_call = next(c for c in manager if "Stage 2" in c.last_user)
    assert any(DRAFT in m.content for m in plan_call.messages)  # stage 2 sees the draft...
    later = manager[manager.index(plan_call) + 1:]
    assert later and not any(DRAFT in m.content for c in later for m in c.messages)  # ...nothing after it does
    final = next(c for c in manager if "Give the final answer" in c.last_user).last_user
    assert all(f"{i}. {step}" in final for i, step in enumerate(PLAN, 1))
    assert final.count("Worker ") == 3 and "image_patch" not in final and "cups =" not in final
    assert "image 2: a crop made by worker 2, box [0, 0, 300, 200]" in final
    assert not any("# count" in m.content for c in manager for m in c.messages)  # skills by name only
    plan = result.steps[0]
    assert plan.role == "manager" and plan.extra["plan"] == PLAN and plan.extra["draft"] == DRAFT


def test_peak_prompt_tokens_per_role(chained):
    script, result, agent = chained
    peaks = result.llm[PEAK_KEY]
    words = lambda c: sum(len(m.content.split()) for m in c.messages)  # the scripted model's token count
    assert peaks == {"manager": max(map(words, script.calls("the manager"))), "worker": max(map(words, script.calls("a worker")))}
    assert result.steps[-1].extra[PEAK_KEY] == peaks
    assert isinstance(agent.llm, PeakTokenRecorder) and agent.llm.inner is script.llm
    assert all(PEAK_KEY not in s.llm for s in result.steps)


def test_recorder_is_reset_per_episode_and_never_nested():
    class Ctx:
        llm = ScriptedChat(responses=["a", "b"])

    ctx = Ctx()
    first = PeakTokenRecorder.install(ctx)
    first.role("worker").chat([])
    assert first.peaks == {"worker": 0}
    again = PeakTokenRecorder.install(ctx)
    assert again is first and again.peaks == {} and isinstance(again.inner, ScriptedChat)
    assert again.usage.since({}) == {PEAK_KEY: {}}


def test_summary_says_when_the_detector_could_not_look(embedded_toolbox, sandbox, photo):
    script = Script([task(1, 0, "Count the towers", skills=["count"])], plan=["Count the towers"])
    result, _ = run(script, embedded_toolbox, sandbox, photo("coffee"))
    summary = next(s for s in result.steps if s.role == "worker").extra["summary"]
    assert summary.startswith("Worker 1 (image 0): Count the towers -> 0 (but find('tower'): no tower found ('tower' is not")
    final = next(c for c in script.calls("the manager") if "Give the final answer" in c.last_user).last_user
    assert summary in final


def test_a_final_zero_resting_on_a_find_the_detector_cannot_do_is_refused(embedded_toolbox, sandbox, photo):
    script = Script([task(1, 0, "Count the towers", skills=["count"])], plan=["Count the towers"], final='{"answer": "0"}')
    result, _ = run(script, embedded_toolbox, sandbox, photo("rocket"), query="How many towers are there?")
    worker = next(s for s in result.steps if s.role == "worker")
    assert worker.guess is None  # the worker's 0 is not a typed guess either
    final = next(s for s in result.steps if s.action == "final answer")
    assert "refused: '0' rests on find('tower')" in final.observation and final.guess is None
    assert result.answer != "0" and result.steps[-1].action.startswith("(fallback)")


# -------------------------------------------------------------------------------------- ablations
def test_no_distill_gives_the_manager_full_worker_traces(embedded_toolbox, sandbox, photo):
    script = Script(list(CHAIN))
    result, _ = run(script, embedded_toolbox, sandbox, photo("coffee"), no_distill=True)
    final = next(c for c in script.calls("the manager") if "Give the final answer" in c.last_user).last_user
    assert "Program:" in final and "image_patch.crop(0, 0" in final and 'find("cup")' in final
    assert "Result:" in [s for s in result.steps if s.role == "worker"][-1].extra["summary"]


def test_no_scope_workers_see_the_whole_image_and_all_history(embedded_toolbox, sandbox, photo):
    script = Script(list(CHAIN))
    result, _ = run(script, embedded_toolbox, sandbox, photo("coffee"), no_scope=True)
    prompts = [c.last_user for c in script.calls("a worker")]
    assert all("Image: image 0: the whole image" in p for p in prompts)
    assert QUESTION in prompts[2] and "image_patch.crop(0, 0, image_patch.width / 2" in prompts[2]  # worker 1's program
    workers = [s for s in result.steps if s.role == "worker"]
    assert [s.extra["image_index"] for s in workers] == [0, 0, 0]
    assert [s.extra["task"]["image_index"] for s in workers] == [0, 1, 2]  # asked for, not given


def test_no_skills_offers_no_skills(embedded_toolbox, sandbox, photo):
    tasks = [task(1, 0, PLAN[0], "image"), task(2, 1, PLAN[1], "image"), task(3, 2, PLAN[2], "text", ["count"])]
    script = Script(tasks)
    result, _ = run(script, embedded_toolbox, sandbox, photo("coffee"), no_skills=True)
    manager = script.calls("the manager")
    assert "procedures by name (none available)" in manager[0].messages[0].content
    reask = [c for c in manager if "That task is invalid" in c.last_user]
    assert reask and "unknown skill(s) 'count'; allowed: none (skills are off)" in reask[0].last_user
    schema = next(c for c in manager if "Write the task" in c.last_user).json_schema
    assert schema["properties"]["skills"] == {"type": "array", "maxItems": 0}


def test_no_hierarchy_is_one_agent_that_sees_everything(embedded_toolbox, sandbox, photo):
    script = Script([])
    script.plan = ["Find the cup", PLAN[2]]
    result, _ = run(script, embedded_toolbox, sandbox, photo("coffee"), no_hierarchy=True)
    assert result.ok, result.error
    assert {s.role for s in result.steps} == {"agent"} and {s.depth for s in result.steps} == {0}
    assert not [c for c in script.llm.calls if "Write the task" in c.last_user or "next task" in c.last_user]
    prompts = [c.last_user for c in script.calls("a worker")]
    assert len(prompts) == 2 and QUESTION in prompts[1] and 'image_patch.find("cup")' in prompts[1]
    assert set(result.llm[PEAK_KEY]) == {"agent"}


# -------------------------------------------------------------------------------------- grounding
def test_grounding_returns_the_box_of_the_workers_patch(embedded_toolbox, sandbox, photo):
    script = Script([task(1, 0, "Find the cup", "box", ["ground_expression"])], plan=["Find the cup"])
    result, _ = run(script, embedded_toolbox, sandbox, photo("coffee"), query="the cup", task_kind="grounding")
    assert result.ok, result.error
    worker = next(s for s in result.steps if s.role == "worker")
    assert result.boxes == worker.boxes and len(result.boxes) == 1
    x1, y1, x2, y2 = result.boxes[0]
    assert x1 < 200 and x2 > 400  # the cup spans the middle of the photo
    assert not [c for c in script.llm.calls if "next task" in c.last_user]  # a found box ends the episode
    assert result.steps[-1].action.startswith("final")


def test_grounding_without_a_workers_box_tries_the_expressions_names(embedded_toolbox, sandbox, photo):
    script = Script([task(1, 0, "Find the saucer", "box", ["ground_expression"])], plan=["Find the saucer"])
    result, _ = run(script, embedded_toolbox, sandbox, photo("coffee"), query="the saucer under the cup", task_kind="grounding")
    assert result.ok, result.error
    assert result.answer_source == "fallback find" and result.steps[-1].action.startswith("(fallback)")
    x1, y1, x2, y2 = result.boxes[0]
    assert x1 < 200 and x2 > 400  # the cup: 'saucer' has no detector class


def test_cli_prints_the_trace(embedded_toolbox, sandbox, photo, capsys):
    from hydra_vr.cli.ask_cmd import print_trace

    script = Script(list(CHAIN))
    result, _ = run(script, embedded_toolbox, sandbox, photo("coffee"))
    print_trace(result)
    out = capsys.readouterr().out
    assert "[manager] plan" in out and "plan: ['Crop the left half'" in out
    assert "   step 3: [worker] Crop the left half" in out and "image_index: 1" in out
    assert "summary: Worker 2 (image 1): Crop the top half of that crop -> image 2:" in out
    assert "peak_prompt_tokens: {'manager':" in out


# --------------------------------------------------------------------------- the real 0.5B GGUF
@pytest.mark.llm
@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed")
def test_e2e_real_small_model(photo):
    from hydra_vr.config import load_config
    from hydra_vr.factory import build_agent

    config = load_config("default", ["llm.options.model=qwen2.5-coder-0.5b", "llm.options.n_ctx=8192", "llm.options.cache=false",
                                     "agent.strategy=hierva", "agent.max_code_retries=1", "agent.hierva.max_tasks=2"])
    agent = build_agent(config)
    try:
        result = agent.run(str(photo("coffee")), "Is there a cup?")
    finally:
        agent.runner.close()
    assert result.ok, result.error
    assert result.answer in ("yes", "no")  # typed
    roles = [s.role for s in result.steps]
    assert roles[0] == "manager" and result.steps[0].extra["plan"]
    assert "worker" in roles or result.answer_source.startswith("fallback")
    assert result.llm[PEAK_KEY]["manager"] > 0
