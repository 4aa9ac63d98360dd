"""HAMMR: dispatcher routing, ReAct agents, agents as tools, limits and refusals (scripted LLM, real sandbox and tools)."""

from __future__ import annotations

import json
import re

import pytest

from hydra_vr.agent.loop import HydraAgent
from hydra_vr.agent.strategies.hammr.acts import ActError, check_act, parse_reply
from hydra_vr.agent.strategies.hammr.agents import agent_table
from hydra_vr.agent.strategy import StrategyConfigError, build_strategy
from hydra_vr.api import Box
from hydra_vr.config import AgentConfig
from hydra_vr.llm.scripted import ScriptedChat
from hydra_vr.prompts import load_examples
from hydra_vr.sandbox import Sandbox

QUESTION = "How many people are in the picture?"
BUS_BOX = Box(10, 228, 800, 752)


@pytest.fixture(scope="module")
def sandbox(embedded_toolbox):
    with Sandbox(embedded_toolbox, timeout_s=15) as sb:
        yield sb


class Script:
    """A scripted LLM for HAMMR: the dispatcher's route, each agent's replies by turn, the LLM tools' replies.

    Turn k of an agent is its k-th reply after its own question (the few-shot turns before it are not counted),
    so an agent called twice replays its script from the start.
    """

    def __init__(self, agents: dict[str, list[str]], route: str = "counting", tools: dict[str, str] | None = None) -> None:
        self.agents, self.route, self.tools = agents, route, tools or {}
        self.llm = ScriptedChat(rule=self.reply)

    def reply(self, messages) -> str:
        system = messages[0].content
        if system.startswith("You route"):
            return json.dumps({"agent": self.route})
        for prefix, text in self.tools.items():
            if system.startswith(prefix):
                return text
        agent = re.match(r"You are (\w+)", system).group(1)
        last = max(i for i, m in enumerate(messages) if m.role == "user" and m.content.startswith(("Question:", "Find the object")))
        turn = sum(1 for m in messages[last:] if m.role == "assistant")
        replies = self.agents[agent]
        return replies[min(turn, len(replies) - 1)]

    def calls_of(self, system_prefix: str) -> list:
        return [c for c in self.llm.calls if c.messages[0].content.startswith(system_prefix)]


def run(embedded_toolbox, sandbox, photo, script: Script, query: str = QUESTION, image: str = "bus", task: str = "vqa", **options):
    config = AgentConfig.model_validate({"strategy": "hammr", "hammr": options})
    agent = HydraAgent(config, script.llm, embedded_toolbox, sandbox)
    return agent.run(str(photo(image)), query, task=task)


COUNT = ['Thought: I find every person.\nAct: people = image_patch.find("person")',
         "Thought: I count them.\nAct: n = len(people)",
         "Thought: There are 4.\nFinish: n"]


def test_dispatcher_routes_to_one_specialist_whose_steps_are_traced(embedded_toolbox, sandbox, photo):
    script = Script({"CountingAgent": COUNT})
    result = run(embedded_toolbox, sandbox, photo, script)
    assert result.ok, result.error
    assert result.answer == "4" and result.answer_source == "agent:counting" and result.strategy == "hammr"
    route = script.calls_of("You route")
    assert len(route) == 1 and route[0].json_schema["properties"]["agent"]["enum"] == ["spatial", "counting", "text", "knowledge"]
    first = result.steps[0]
    assert (first.role, first.depth, first.extra["route"]) == ("dispatcher", 0, "counting")
    assert first.action == f'answer = CountingAgent("{QUESTION}")' and first.observation == "CountingAgent answered '4'"
    agent_steps = [s for s in result.steps if s.role == "agent:counting"]
    assert [s.action for s in agent_steps] == ['people = image_patch.find("person")', "n = len(people)", "Finish: n"]
    assert all(s.depth == 1 for s in agent_steps) and agent_steps[0].extra["thought"] == "I find every person."
    assert agent_steps[0].observation.startswith("stored 4 patches in 'people' at [")  # the patches stay in the variable
    assert len(agent_steps[0].boxes) == 4 and agent_steps[1].observation == "n = 4"
    assert result.steps[-1].role == "dispatcher" and result.steps[-1].action == "Finish: 4"
    # the specialist saw its own prompt: its tools, its few-shot traces, then the question with the answer type
    counting_call = script.calls_of("You are CountingAgent")[0]
    assert "patch.find(object_name: str)" in counting_call.messages[0].content and "Recall" not in counting_call.messages[0].content
    assert counting_call.stop and "Observe:" in counting_call.stop
    assert counting_call.last_user.startswith(f"Question: {QUESTION}") and "digits" in counting_call.last_user


def test_route_to_text_agent_reads_the_image(embedded_toolbox, sandbox, photo):
    script = Script({"TextAgent": ["Thought: I read the text.\nAct: text = image_patch.read_text()",
                                   "Thought: It is a bus line sign.\nFinish: text"]}, route="text")
    result = run(embedded_toolbox, sandbox, photo, script, query="What is written on the bus?")
    assert result.steps[0].extra["route"] == "text" and [s.role for s in result.steps[1:3]] == ["agent:text"] * 2
    assert result.steps[1].observation.startswith("text = ") or "stored a text" in result.steps[1].observation
    assert result.answer and result.answer_source in ("agent:text", "budget exhausted: typed guess")


def test_malformed_reply_malformed_act_unknown_tool_and_undefined_variable_are_observations(embedded_toolbox, sandbox, photo):
    script = Script({"CountingAgent": [
        "There are probably some people.",  # neither Act nor Finish
        'Thought: find them\nAct: people = image_patch.find("person"',  # syntax
        'Thought: recall\nAct: note = Recall("bus")',  # not a counting tool
        "Thought: count\nAct: n = len(persons)",  # never defined
        "Thought: loop\nAct: for p in people: print(p)",  # not one assignment or call
        *COUNT,
    ]})
    result = run(embedded_toolbox, sandbox, photo, script, max_steps=8)
    obs = [s.observation for s in result.steps if s.role == "agent:counting"]
    assert obs[0].startswith("Error: malformed reply") and result.steps[1].action == "(malformed reply)"
    assert obs[1].startswith("Error: malformed Act (syntax error")
    assert obs[2].startswith("Error: unknown tool 'Recall': CountingAgent can call") and ".find()" in obs[2]
    assert obs[3].startswith("Error: undefined variable 'persons'; defined variables: image_patch")
    assert obs[4].startswith("Error: malformed Act: a For statement is not allowed")
    assert result.answer == "4"  # the agent went on after each error
    # the agent saw each error as its observation
    last_call = script.calls_of("You are CountingAgent")[-1]
    assert any(m.content.startswith("Observe: Error: undefined variable 'persons'") for m in last_call.messages)


def test_refused_finish_of_the_wrong_type_and_failure_strings(embedded_toolbox, sandbox, photo):
    script = Script({"CountingAgent": ["Thought: no idea\nFinish: not found", "Thought: many\nFinish: a crowd", *COUNT]})
    result = run(embedded_toolbox, sandbox, photo, script)
    steps = [s for s in result.steps if s.role == "agent:counting"]
    assert steps[0].observation.startswith("Refused: 'not found' reports a failure") and steps[0].decision == "continue"
    assert steps[1].observation.startswith("Refused: 'a crowd' does not fit") and "digits" in steps[1].observation
    assert result.answer == "4" and steps[-1].decision == "answer"


def test_finish_zero_from_a_find_the_detector_cannot_do_is_refused(embedded_toolbox, sandbox, photo):
    script = Script({"CountingAgent": ['Thought: I find the towers.\nAct: towers = image_patch.find("tower")',
                                       "Thought: I count them.\nAct: n = len(towers)", "Thought: none.\nFinish: n",
                                       "Thought: the detector cannot see towers; I count them myself.\nFinish: 12"]})
    result = run(embedded_toolbox, sandbox, photo, script, query="How many towers are there?", image="rocket")
    steps = [s for s in result.steps if s.role == "agent:counting"]
    refused = next(s for s in steps if s.action == "Finish: n")
    assert refused.observation.startswith("Refused: '0' rests on find('tower')") and refused.decision == "continue"
    assert result.answer == "12" and steps[-1].decision == "answer"


def test_budget_exhausted_answers_from_what_was_observed_and_says_so(embedded_toolbox, sandbox, photo):
    script = Script({"CountingAgent": COUNT[:2]})  # never finishes
    result = run(embedded_toolbox, sandbox, photo, script, max_steps=2)
    budget = [s for s in result.steps if s.decision == "budget"]
    assert len(budget) == 1 and budget[0].action == "(budget exhausted) answer from what was observed"
    assert budget[0].role == "agent:counting" and budget[0].depth == 1
    assert result.answer == "4" and result.answer_source == "budget exhausted: typed guess"
    assert len(script.calls_of("You are CountingAgent")) == 2


def test_agents_as_tools_return_answers_and_patches_into_the_namespace(embedded_toolbox, sandbox, photo):
    script = Script({
        "SpatialAgent": ['Thought: CountingAgent counts.\nAct: n = CountingAgent("How many people are there?")',
                         'Thought: GroundingAgent finds the bus.\nAct: bus = GroundingAgent("the bus")',
                         "Thought: compare\nAct: many = int(n) > 2 and bus.width > 300",
                         "Thought: yes\nFinish: yes"],
        "CountingAgent": COUNT,
        "GroundingAgent": ['Thought: find it\nAct: buses = image_patch.find("bus")', "Thought: the first\nFinish: buses"],
    }, route="spatial")
    result = run(embedded_toolbox, sandbox, photo, script, query="Are there more than two people near the big bus?")
    assert result.answer == "yes", [(s.action, s.observation) for s in result.steps]
    roles = [(s.role, s.depth) for s in result.steps]
    assert ("agent:counting", 2) in roles and ("agent:grounding", 2) in roles
    spatial = [s for s in result.steps if s.role == "agent:spatial"]
    assert spatial[0].observation == "CountingAgent answered '4'; n = '4'"
    assert spatial[1].observation.startswith("GroundingAgent answered 'buses at [") and "stored a patch in 'bus' at [" in spatial[1].observation
    assert spatial[2].observation == "many = True"  # int(n) and bus.width worked in the sandbox
    # the called agent asked its own question, typed for it
    assert script.calls_of("You are CountingAgent")[0].last_user.startswith("Question: How many people are there?")
    assert spatial[0].llm.get("calls", 1) <= 1  # the called agent's LLM use is in its own steps


def test_an_agent_never_calls_itself_or_an_ancestor(embedded_toolbox, sandbox, photo):
    script = Script({
        "KnowledgeAgent": ['Thought: ask spatial\nAct: c = SpatialAgent("What color is that bus?")', "Thought: done\nFinish: c"],
        "SpatialAgent": ['Thought: myself\nAct: x = SpatialAgent("What color is that bus?")',
                         'Thought: my caller\nAct: y = KnowledgeAgent("What is the bus used for?")',
                         "Thought: answer\nFinish: blue"],
    }, route="knowledge")
    result = run(embedded_toolbox, sandbox, photo, script, query="What color is this vehicle?")
    spatial = [s for s in result.steps if s.role == "agent:spatial"]
    assert spatial[0].observation == ("Error: SpatialAgent may not call SpatialAgent: an agent never calls itself or an agent that "
                                      "called it (QuestionDispatcher > KnowledgeAgent > SpatialAgent)")
    assert spatial[1].observation.startswith("Error: SpatialAgent may not call KnowledgeAgent")
    assert result.answer == "blue" and len(script.calls_of("You are KnowledgeAgent")) == 2  # no second KnowledgeAgent run


def test_depth_limit_refuses_deeper_agent_calls(embedded_toolbox, sandbox, photo):
    script = Script({"SpatialAgent": ['Thought: count\nAct: n = CountingAgent("How many people are there?")',
                                      "Thought: myself\nAct: n = len(image_patch.find(\"person\"))", "Thought: ok\nFinish: n"],
                     "CountingAgent": COUNT}, route="spatial")
    result = run(embedded_toolbox, sandbox, photo, script, query="How many people stand near the bus?", max_depth=1)
    spatial = [s for s in result.steps if s.role == "agent:spatial"]
    assert spatial[0].observation.startswith("Error: depth limit 1 reached: SpatialAgent cannot call another agent")
    assert not script.calls_of("You are CountingAgent") and result.answer == "4"


def test_llm_tools_recall_is_labelled_and_results_reach_the_sandbox(embedded_toolbox, sandbox, photo):
    script = Script({"KnowledgeAgent": [
        'Thought: split\nAct: subs = DecomposeQuestion("What is this vehicle used for?")',
        "Thought: recall\nAct: note = Recall(subs[0])",
        "Thought: answer\nAct: answer = AnswerWithContext(subs[1], note)",
        "Thought: done\nFinish: answer"]},
        route="knowledge",
        tools={"You write what you know": "A bus is a large road vehicle that carries many passengers along a fixed route in a town.",
               "Split a question": json.dumps({"first": "What vehicle is this?", "second": "What is it used for?"}),
               "Answer the question using the context": json.dumps({"answer": "carrying passengers"})})
    result = run(embedded_toolbox, sandbox, photo, script, query="What is this vehicle used for?")
    obs = [s.observation for s in result.steps if s.role == "agent:knowledge"]
    assert obs[0] == "DecomposeQuestion: subs = ['What vehicle is this?', 'What is it used for?']"
    assert obs[1] == "Recall (the LLM's own knowledge, not a checked source): stored a text of 89 characters in 'note'"
    assert obs[2] == "AnswerWithContext: answer = 'carrying passengers'"
    assert script.calls_of("You write what you know")[0].last_user == "What vehicle is this?"  # subs[0] read from the sandbox
    assert "Question: What is it used for?" in script.calls_of("Answer the question using the context")[0].last_user
    assert result.answer == "carrying passengers"


def test_flat_option_runs_one_agent_with_every_tool(embedded_toolbox, sandbox, photo):
    script = Script({"GenericAgent": COUNT})
    result = run(embedded_toolbox, sandbox, photo, script, flat=True)
    assert result.answer == "4" and not script.calls_of("You route")
    assert {s.role for s in result.steps} == {"agent:generic"} and {s.depth for s in result.steps} == {0}
    system = script.calls_of("You are GenericAgent")[0].messages[0].content
    assert "Recall(entity" in system and "patch.read_text()" in system and "CountingAgent" not in system


def test_grounding_task_returns_a_box(embedded_toolbox, sandbox, photo):
    script = Script({"GroundingAgent": ['Thought: find it\nAct: buses = image_patch.find("bus")',
                                        "Thought: not a patch\nFinish: the bus", "Thought: the bus\nFinish: buses"]})
    result = run(embedded_toolbox, sandbox, photo, script, query="the bus", task="grounding")
    assert result.ok, result.error
    assert Box(*result.boxes[0]).iou(BUS_BOX) > 0.7 and not script.calls_of("You route")
    assert result.steps[0].role == "dispatcher" and result.steps[0].extra["route"] == "grounding"
    refused = [s for s in result.steps if s.action == "Finish: the bus"][0]
    assert refused.observation.startswith("Refused: Finish with the variable that holds the object's patch")


def test_react_dispatcher_calls_the_specialist_as_a_tool(embedded_toolbox, sandbox, photo):
    script = Script({"QuestionDispatcher": [f'Thought: counting\nAct: answer = CountingAgent("{QUESTION}")', "Thought: done\nFinish: answer"],
                     "CountingAgent": COUNT})
    result = run(embedded_toolbox, sandbox, photo, script, dispatcher="react")
    assert result.answer == "4" and [s.role for s in result.steps][:2] == ["dispatcher", "agent:counting"]
    assert result.steps[0].observation == "CountingAgent answered '4'; answer = '4'"


def test_options_are_validated():
    with pytest.raises(StrategyConfigError, match="agent.hammr options"):
        build_strategy("hammr", {"flat": True, "max_setps": 3})
    assert build_strategy("hammr", {"flat": True}).options.flat


def test_act_checker_and_reply_parser():
    allow = agent_table(False)["CountingAgent"].allowlist()
    act = check_act("len(people)", allow, {"people"}, "CountingAgent")
    assert act.code == "result = len(people)" and act.targets == ["result"]  # a bare value is kept in a variable
    assert check_act("n = len([p for p in people if p.verify_property('person', 'red')])", allow, {"people"}, "X").targets == ["n"]
    with pytest.raises(ActError, match="private"):
        check_act("x = people.__class__", allow, {"people"}, "X")
    with pytest.raises(ActError, match="unknown tool .read_text"):
        check_act("t = image_patch.read_text()", allow, {"image_patch"}, "CountingAgent")
    reply = parse_reply("Thought: I look\nfor the dog.\nAct: `dogs = image_patch.find(\"dog\")`\nAct: second")
    assert (reply.thought, reply.act, reply.finish) == ("I look for the dog.", 'dogs = image_patch.find("dog")', None)
    assert parse_reply("Final Answer: 3").finish == "3"


def test_few_shot_traces_use_only_each_agents_tools_and_defined_variables():
    agents = agent_table(False)
    for name, traces in load_examples("hammr")["agents"].items():
        for trace in traces:
            defined = {"image", "image_patch"}
            for turn in trace["turns"]:
                if "act" in turn:
                    defined |= set(check_act(turn["act"], agents[name].allowlist(), defined, name).targets)
        assert 2 <= len(traces) <= 3, name
    assert {e["agent"] for e in load_examples("hammr")["dispatcher"]} == {"spatial", "counting", "text", "knowledge"}


@pytest.mark.llm
@pytest.mark.slow
def test_e2e_real_small_llm_routes_and_answers_typed(photo):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (scripts/install_llm.sh)")
    from hydra_vr.config import load_config
    from hydra_vr.factory import build_agent

    config = load_config("default", ["llm.options.model=qwen2.5-coder-0.5b", "llm.options.n_ctx=8192", "llm.options.cache=false",
                                     "agent.strategy=hammr", "agent.hammr.max_steps=4"])
    agent = build_agent(config)
    try:
        result = agent.run(str(photo("bus")), QUESTION)
    finally:
        agent.runner.close()
    assert result.ok, result.error
    assert result.answer and result.answer.isdigit(), (result.answer, result.answer_source)  # typed: a count
    assert result.steps[0].role == "dispatcher" and result.steps[0].extra["route"] in ("spatial", "counting", "text", "knowledge")
    assert any(s.role.startswith("agent:") and s.depth == 1 for s in result.steps)
    assert result.llm["calls"] >= 2
