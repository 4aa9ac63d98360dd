"""AVIS: graph feasibility, backtracking, budget, planner re-asks, ablations, grounding (scripted LLM, real
sandbox and real embedded vision tools), and one end-to-end run on the real 0.5B GGUF."""

from __future__ import annotations

import importlib.util
import json

import pytest

from hydra_vr.agent.loop import HydraAgent
from hydra_vr.agent.strategies.avis.graph import load_graph
from hydra_vr.agent.strategies.avis.pool import ExamplePool
from hydra_vr.agent.strategies.avis.search import MEMORY_SOURCE
from hydra_vr.agent.strategy import StrategyConfigError, build_strategy, strategy_table
from hydra_vr.api.types import Box
from hydra_vr.config import AgentConfig
from tests.scripted_roles import RoleQueues
from tests.test_answer_roles import ans, sandbox, toolbox_with_llm  # noqa: F401  (shared fixtures)

MARKERS = {
    "planner": "You choose the next action",
    "reasoner": "You judge one tool output",
    "answer": "You answer a question about an image from the notes",
    "recall": "You answer general-knowledge questions",
    "describe": "You answer questions about an image you cannot see",
}
BUS = [10, 228, 800, 752]  # the bus in sample:bus (as tests/test_e2e_llm.py)


class Script(RoleQueues):
    def __init__(self, **queues: list[str]) -> None:
        super().__init__(MARKERS, **queues)


def plan(action: str, query: str = "") -> str:
    return json.dumps({"action": action, "query": query})


def label(kind: str, fact: str = "a fact", answer: str = "") -> str:
    return json.dumps({"label": kind, "fact": fact, "answer": answer})


def run(script: Script, toolbox, sandbox, image, query, task="vqa", **options):
    toolbox.holder["llm"] = script.chat
    agent = HydraAgent(AgentConfig(), script.chat, toolbox, sandbox, strategy=build_strategy("avis", options))
    result = agent.run(str(image), query, task=task)
    assert result.error is None, result.error
    return result


def extras(result):
    return [s.extra for s in result.steps if "state" in s.extra]


# ---------------------------------------------------------------------------------------------- graph
def test_graph_feasibility_and_exclusion(tmp_path):
    g = load_graph()
    assert g.feasible("START", "vqa", set()) == ["caption", "vqa", "find"]
    assert g.feasible("START", "grounding", set()) == ["caption", "find", "ground"]
    assert "find" not in g.feasible("START", "vqa", {"find"})  # taken in this state
    assert {"classify_box", "ocr_box", "colors_box"} <= set(g.feasible("find", "vqa", set()))
    assert not set(g.feasible("START", "vqa", set())) & {"classify_box", "recall", "llm_qa"}  # box actions need a find
    assert set(g.feasible("START", "vqa", set(), use_graph=False)) == set(g.for_task("vqa"))
    # a user's graph: another file, checked when the strategy is built
    mine = tmp_path / "g.yaml"
    mine.write_text("start: START\nactions:\n  vqa: {doc: ask, query: question}\n  llm_qa: {doc: answer}\n"
                    "graph:\n  START: [vqa]\n  vqa: [llm_qa]\n")
    assert build_strategy("avis", {"graph": str(mine), "order": ["vqa"]}).graph.feasible("vqa", "vqa", set()) == ["llm_qa"]
    mine.write_text("start: START\nactions:\n  vqa: {doc: ask}\ngraph:\n  START: [vqa, teleport]\n")
    with pytest.raises(StrategyConfigError, match="unknown actions \\['teleport'\\]"):
        build_strategy("avis", {"graph": str(mine)})
    with pytest.raises(StrategyConfigError, match="agent.avis options"):
        build_strategy("avis", {"max_call": 3})
    assert "avis" in [row[0] for row in strategy_table()]


def test_pool_replays_trajectories_through_the_graph():
    g = load_graph()
    pool = ExamplePool.load(g)
    assert len({d.question for d in pool.decisions}) >= 12
    for d in pool.decisions:  # every example decision was feasible where it was taken
        assert d.action in d.feasible and set(d.feasible) <= set(g.allowed(d.state, d.task))
    assert any(d.state != "START" and d.facts for d in pool.decisions)  # later decisions carry the memory so far
    got = pool.retrieve("What does this cat usually eat?", "vqa", "caption", ["vqa", "find", "recall", "llm_qa"], 3)
    assert len(got) == 3 and len({d.action for d in got}) == 3
    assert all(d.action in ("vqa", "find", "recall", "llm_qa") for d in got)
    assert got[0].state == "caption" and got[0].action == "recall"  # same state, similar question first


# --------------------------------------------------------------------------------------------- search
def test_planner_sees_only_feasible_actions_and_taken_ones_are_excluded(toolbox_with_llm, sandbox, photo):
    script = Script(
        planner=[plan("caption"), plan("find", "cat"), plan("classify_box"), plan("recall", "What does a cat eat?")],
        describe=[ans("a cat on a blanket")],
        reasoner=[label("informative", "a cat on a blanket"), label("informative", "one cat, now focused"),
                  label("informative", "a tabby cat"), label("answer", "(LLM knowledge) cats eat fish", "fish")],
        recall=["Cats eat fish and mice."],
    )
    result = run(script, toolbox_with_llm, sandbox, photo("chelsea"), "What food does this animal usually eat?")
    assert result.answer == "fish" and "recall" in result.answer_source
    ex = extras(result)
    assert [e["state"] for e in ex] == ["START", "caption", "find", "classify_box"]
    assert "recall" not in ex[2]["feasible"] and "recall" in ex[3]["feasible"]  # the graph's edges
    assert "classify_box" not in ex[3]["feasible"]  # no query, same focus: already done
    assert ex[0]["feasible"] == ["caption", "vqa", "find"]
    schemas = [c.json_schema["properties"]["action"]["enum"] for c in script.calls("planner")]
    assert schemas == [e["feasible"] for e in ex]  # the JSON schema allows exactly the feasible actions
    last_prompt = script.calls("planner")[3].messages[-1].content
    assert "- recall:" in last_prompt and "- caption" not in last_prompt.split("Feasible actions:")[1]
    assert ex[3]["source"].startswith("LLM knowledge")  # recall is labelled as the model's own knowledge
    assert "LLM knowledge" in script.calls("reasoner")[3].messages[-1].content
    # retrieved in-context examples are earlier turns, each about a feasible action
    turns = script.calls("planner")[0].messages
    assert turns[0].role == "system" and turns[2].role == "assistant"
    assert all(json.loads(m.content)["action"] in ex[0]["feasible"] for m in turns[1:-1] if m.role == "assistant")


def test_uninformative_backtracks_to_the_same_state_and_restores_the_focus(toolbox_with_llm, sandbox, photo):
    script = Script(
        planner=[plan("find", "bus"), plan("find", "person"), plan("colors_box")],
        reasoner=[label("informative", "one bus, now focused"), label("uninformative", "people say nothing about the bus colour"),
                  label("answer", "the bus is mostly red", "red")],
    )
    result = run(script, toolbox_with_llm, sandbox, photo("bus"), "What color is that bus?")
    ex = extras(result)
    assert [e["label"] for e in ex] == ["informative", "uninformative", "answer"]
    assert [e["backtrack"] for e in ex] == [False, True, False] and result.steps[1].decision == "backtrack"
    assert ex[1]["state"] == ex[2]["state"] == "find"  # control came back to the same state...
    assert "find" in ex[1]["feasible"] and "find" not in ex[2]["feasible"]  # ...with that action excluded
    # the person box was rejected: the colours were measured on the bus again (the namespace was restored)
    assert result.steps[2].code.startswith("colour = focus.")
    focus = sandbox.run("final_answer = focus", str(photo("bus")))
    assert Box(*focus.final_answer["box"]).iou(Box(*BUS)) > 0.7
    assert result.answer == "red"
    # everything went into working memory, the rejected step too
    memory = script.calls("reasoner")[2].messages[-1].content
    assert "find(person)" in memory and "uninformative" in memory


def test_empty_output_is_uninformative_without_asking_the_reasoner(toolbox_with_llm, sandbox, photo):
    script = Script(
        planner=[plan("find", "giraffe"), plan("vqa", "What animal is shown here?")],
        describe=[ans("cat")],
        reasoner=[label("answer", "the animal is a cat", "cat")],
    )
    result = run(script, toolbox_with_llm, sandbox, photo("chelsea"), "What animal is shown here?")
    ex = extras(result)
    assert ex[0]["label"].startswith("uninformative (by rule") and ex[0]["backtrack"] is True
    assert ex[1]["state"] == "START" and "find" not in ex[1]["feasible"]
    assert len(script.calls("reasoner")) == 1 and result.answer == "cat"


def test_answer_label_is_held_to_the_answer_type(toolbox_with_llm, sandbox, photo):
    script = Script(
        planner=[plan("caption"), plan("llm_qa")],
        describe=[ans("a cat lying on a blanket")],
        reasoner=[label("answer", "a cat", "yes")],  # "yes" does not answer an open question
        answer=[ans("cat")],
    )
    result = run(script, toolbox_with_llm, sandbox, photo("chelsea"), "What animal is shown here?")
    ex = extras(result)
    assert "refused" in ex[0] and result.steps[0].decision == "continue" and ex[1]["state"] == "caption"
    assert result.answer == "cat" and result.answer_source == "reasoner"
    # the declared answer checks hold AVIS's answers too: "cat" for what this animal eats is no kind of food
    script = Script(planner=[plan("caption"), plan("recall", "What does a cat usually eat?")], describe=[ans("a cat on a blanket")],
                    reasoner=[label("answer", "a cat", "cat"), label("answer", "(LLM knowledge) cats eat fish", "fish")],
                    recall=["Cats eat fish."])
    result = run(script, toolbox_with_llm, sandbox, photo("chelsea"), "What food does this animal usually eat?")
    assert "not a kind of food" in extras(result)[0]["refused"] and result.answer == "fish"


def test_budget_exhaustion_answers_from_working_memory(toolbox_with_llm, sandbox, photo):
    script = Script(
        planner=[plan("caption"), plan("find", "cat")],
        describe=[ans("a cat lying on a blanket")],
        reasoner=[label("informative", "a cat on a blanket"), label("informative", "one cat")],
        answer=[ans("cat")],
    )
    result = run(script, toolbox_with_llm, sandbox, photo("chelsea"), "What animal is shown here?", max_calls=2)
    assert len(script.calls("planner")) == 2
    assert result.answer == "cat" and result.answer_source == MEMORY_SOURCE
    last = result.steps[-1]
    assert "answer from working memory" in last.action and last.extra["source"] == MEMORY_SOURCE
    assert "a cat on a blanket" in script.calls("answer")[0].messages[-1].content  # the memory, not the image
    # an answer from memory that does not fit the type (twice): the typed fallback, still marked
    script = Script(planner=[plan("caption")], describe=[ans("a cat"), ans("2")], reasoner=[label("informative", "a cat")],
                    answer=[ans("some"), ans("several")])
    result = run(script, toolbox_with_llm, sandbox, photo("chelsea"), "How many cats are there?", max_calls=1)
    assert result.answer == "2" and result.answer_source == "fallback simple_query (the budget of actions)"


def test_invalid_planner_json_is_reasked_then_falls_back(toolbox_with_llm, sandbox, photo):
    script = Script(
        planner=["I think we should look", plan("ocr_box"), plan("find", "")],
        describe=[ans("a cat")],
        reasoner=[label("answer", "the image shows a cat", "cat")],
    )
    result = run(script, toolbox_with_llm, sandbox, photo("chelsea"), "What animal is shown here?", planner_retries=2)
    ex = extras(result)
    assert len(script.calls("planner")) == 3
    errors = ex[0]["planner_errors"]
    assert "not a JSON object" in errors[0] and "'ocr_box' is not a feasible action" in errors[1] and "needs a query" in errors[2]
    assert errors[-1] == "fell back to the first feasible action" and ex[0]["action"] == "caption"
    reask = script.calls("planner")[1].messages[-1].content
    assert reask.startswith("Not valid") and "caption" in reask
    # a valid reply on the re-ask is taken
    script = Script(planner=["{", plan("vqa", "What animal is shown here?")], describe=[ans("cat")],
                    reasoner=[label("answer", "a cat", "cat")])
    result = run(script, toolbox_with_llm, sandbox, photo("chelsea"), "What animal is shown here?")
    assert extras(result)[0]["action"] == "vqa" and len(extras(result)[0]["planner_errors"]) == 1


# -------------------------------------------------------------------------------------------- ablations
def test_no_graph_allows_every_action(toolbox_with_llm, sandbox, photo):
    script = Script(planner=[plan("recall", "What do cats eat?")], recall=["Cats eat fish."],
                    reasoner=[label("answer", "(LLM knowledge) cats eat fish", "fish")])
    result = run(script, toolbox_with_llm, sandbox, photo("chelsea"), "What food does this animal usually eat?", no_graph=True)
    assert set(extras(result)[0]["feasible"]) == set(load_graph().for_task("vqa"))
    assert result.answer == "fish"
    # with the graph, recall at START is not feasible: refused and re-asked
    script = Script(planner=[plan("recall", "What do cats eat?"), plan("vqa", "What animal is shown here?")], describe=[ans("cat")],
                    reasoner=[label("answer", "a cat", "cat")])
    result = run(script, toolbox_with_llm, sandbox, photo("chelsea"), "What animal is shown here?")
    assert "'recall' is not a feasible action" in extras(result)[0]["planner_errors"][0]


def test_no_backtrack_moves_on_after_an_uninformative_output(toolbox_with_llm, sandbox, photo):
    def script():
        return Script(planner=[plan("caption"), plan("llm_qa")], describe=[ans("a blanket")],
                      reasoner=[label("uninformative", "a blanket says nothing")], answer=[ans("cat")])

    with_bt = extras(run(script(), toolbox_with_llm, sandbox, photo("chelsea"), "What animal is shown here?", no_graph=True))
    without = extras(run(script(), toolbox_with_llm, sandbox, photo("chelsea"), "What animal is shown here?", no_graph=True,
                         no_backtrack=True))
    assert with_bt[1]["state"] == "START" and with_bt[0]["backtrack"] is True
    assert without[1]["state"] == "caption" and without[0]["backtrack"] is False


def test_fixed_order_needs_no_planner(toolbox_with_llm, sandbox, photo):
    script = Script(describe=[ans("a cat on a blanket")],
                    reasoner=[label("informative", "a cat"), label("informative", "one cat"), label("answer", "tabby cat", "cat")])
    result = run(script, toolbox_with_llm, sandbox, photo("chelsea"), "What animal is shown here?", fixed_order=True)
    assert script.calls("planner") == []
    assert [e["action"] for e in extras(result)] == ["caption", "find", "classify_box"]
    assert extras(result)[1]["query"] == "animal"  # the noun proposed from the question
    assert "tiger cat" in result.steps[2].observation or "tabby" in result.steps[2].observation
    assert result.answer == "cat"


# -------------------------------------------------------------------------------------------- grounding
def test_grounding_ends_with_a_box(toolbox_with_llm, sandbox, photo):
    script = Script(planner=[plan("find", "bus"), plan("ground", "the bus")], reasoner=[label("informative", "one bus")])
    result = run(script, toolbox_with_llm, sandbox, photo("bus"), "the bus", task="grounding")
    assert script.calls("reasoner")[0].json_schema["properties"]["label"]["enum"] == ["informative", "uninformative"]
    assert Box(*result.boxes[0]).iou(Box(*BUS)) > 0.7 and result.steps[-1].decision == "answer"
    assert extras(result)[1]["state"] == "find" and "ground" in extras(result)[1]["feasible"]
    # a position in the expression picks among the found boxes
    script = Script(planner=[plan("ground", "the person on the left")])
    people = run(script, toolbox_with_llm, sandbox, photo("bus"), "the person on the left", task="grounding")
    found = people.steps[0].result["variables"]
    xs = sorted(b[0] for v in found if v["name"] == "found" for b in v["boxes"])
    assert len(xs) >= 2 and people.boxes[0][0] == xs[0]


# -------------------------------------------------------------------------------------------- real LLM
@pytest.mark.llm
@pytest.mark.slow
def test_avis_end_to_end_on_the_real_small_model(photo):
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (scripts/install_llm.sh)")
    from hydra_vr.config import load_config
    from hydra_vr.factory import build_agent

    cfg = load_config("default", ["llm.options.model=qwen2.5-coder-0.5b", "llm.options.n_ctx=8192", "llm.options.cache=false",
                                  "agent.strategy=avis", "agent.avis.max_calls=3"])
    agent = build_agent(cfg)
    try:
        result = agent.run(str(photo("chelsea")), "What animal is shown here?")
    finally:
        agent.runner.close()
    assert result.ok, result.error
    assert result.strategy == "avis" and result.answer_type == "open"
    from hydra_vr.answer_types import expected_type

    assert expected_type("What animal is shown here?").fits(result.answer)
    ex = extras(result)
    assert ex and ex[0]["state"] == "START" and all(e["action"] in e["feasible"] for e in ex)
    assert all(e["label"].split(" ")[0] in ("informative", "uninformative", "answer") for e in ex)
    assert result.llm["calls"] > 0 and result.answer_source
