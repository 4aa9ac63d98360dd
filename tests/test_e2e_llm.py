"""End to end with the real embedded LLM (Qwen2.5-Coder-0.5B GGUF on llama.cpp) and real tools."""

from __future__ import annotations

import importlib.util

import pytest

from hydra_vr.config import load_config

pytestmark = [pytest.mark.llm, pytest.mark.slow]

if importlib.util.find_spec("llama_cpp") is None:
    pytest.skip("llama-cpp-python is not installed (scripts/install_llm.sh)", allow_module_level=True)

CONFIG = load_config("default", [
    "llm.options.model=qwen2.5-coder-0.5b", "llm.options.n_ctx=8192", "llm.options.cache=false",
    "agent.max_steps=2", "agent.max_code_retries=1",
])


@pytest.fixture(scope="module")
def agent():
    from hydra_vr.factory import build_agent

    a = build_agent(CONFIG)
    yield a
    a.runner.close()


def test_describe_vqa_answers_from_tool_findings(agent, photo):
    from hydra_vr.api import bind_toolbox

    Patch = bind_toolbox(agent.toolbox)
    image = Patch(str(photo("coffee")))
    with agent.toolbox.recording() as calls:
        answer = image.simple_query("Is there a cup in the image?")
    assert answer == "yes"
    call = calls[-1]
    assert call.tool == "simple_query" and "cup (score" in call.result.evidence  # the LLM saw the detection


def test_ask_runs_the_whole_loop(agent, photo):
    result = agent.run(str(photo("coffee")), "Is there a cup?")
    assert result.ok, result.error
    assert result.steps and result.steps[0].options, "the planner proposed options"
    assert any(a.ok for s in result.steps for a in s.attempts), "at least one generated program ran"
    assert result.llm["prompt_tokens"] > 0 and result.llm["completion_tokens"] > 0
    assert result.answer == "yes"


def test_ground_returns_a_box_on_the_bus(agent, photo):
    result = agent.run(str(photo("bus")), "the bus", task="grounding")
    assert result.ok, result.error
    from hydra_vr.api import Box

    assert Box(*result.boxes[0]).iou(Box(10, 228, 800, 752)) > 0.7


def test_the_real_planner_writes_exactly_its_count_of_compact_options(agent):
    import json

    planner, _, _ = agent.roles("vqa", reserved=1)  # the whole-question option holds one slot
    out = planner.propose("Which animal is sleeping on the rug?", "No steps yet.")
    assert planner.n == agent.config.num_options - 1
    pairs = json.loads(out.raw)["instructions"]  # the grammar holds the model to [instruction, weight] pairs
    assert len(pairs) == planner.n and all(isinstance(p[0], str) and isinstance(p[1], int) for p in pairs)
    assert 1 <= len(out.options) <= planner.n and sum(o.probability for o in out.options) == pytest.approx(1.0)
