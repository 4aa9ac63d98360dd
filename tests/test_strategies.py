"""The strategy seam: registry and options, the shared step, per-step tool calls, episode state, the trace."""

from __future__ import annotations

import json
import threading

import pytest
from typer.testing import CliRunner

from hydra_vr.agent.loop import HydraAgent
from hydra_vr.agent.step import EpisodeState
from hydra_vr.agent.strategy import StrategyConfigError, build_strategy, check_sections, strategy_table
from hydra_vr.agent.types import EpisodeResult, StepTrace
from hydra_vr.cli.main import app
from hydra_vr.config import AgentConfig, ConfigError, load_config
from hydra_vr.llm.scripted import ScriptedChat
from hydra_vr.memory import MemoryEntry, StateMemoryBank
from hydra_vr.sandbox import Sandbox


@pytest.fixture(scope="module")
def sandbox(embedded_toolbox):
    with Sandbox(embedded_toolbox, timeout_s=15) as sb:
        yield sb


def test_registry_lists_each_strategy_with_a_line_and_validates_options():
    names = [row[0] for row in strategy_table()]
    assert {"hydra", "vipergpt"} <= set(names)
    assert all(summary for _, summary, _ in strategy_table())
    with pytest.raises(StrategyConfigError, match="unknown agent strategy 'nope'.*hydra"):
        build_strategy("nope")
    with pytest.raises(StrategyConfigError, match="agent.vipergpt options"):
        build_strategy("vipergpt", {"not_an_option": 1})
    with pytest.raises(StrategyConfigError, match="agent.hamr: no agent strategy"):
        check_sections({"hamr": {"flat": True}})


def test_cli_strategies_command_and_bad_strategy_flag():
    out = CliRunner().invoke(app, ["strategies"])
    assert out.exit_code == 0 and "hydra" in out.output and "vipergpt" in out.output
    bad = CliRunner().invoke(app, ["ask", "sample:bus", "What is this?", "--strategy", "nope"])
    assert bad.exit_code == 2 and "unknown agent strategy 'nope'" in bad.output


def test_mode_vipergpt_is_another_name_for_the_strategy():
    assert AgentConfig(mode="vipergpt").strategy_name == "vipergpt"
    assert AgentConfig(strategy="vipergpt").strategy_name == "vipergpt"
    assert AgentConfig().strategy_name == "hydra"
    with pytest.raises(ValueError, match="agent.hammr must be a section"):
        AgentConfig.model_validate({"hammr": 3})


def test_mode_full_without_a_checkpoint_is_a_clear_error(tmp_path, monkeypatch):
    from hydra_vr.controller import checkpoint
    from hydra_vr.factory import build_controller

    monkeypatch.setattr(checkpoint, "SHIPPED_DIR", tmp_path / "no-shipped-controller")  # an install that ships none

    with pytest.raises(ConfigError, match="mode full runs the trained RL controller"):
        build_controller(load_config("default", ["agent.mode=full"]))
    out = CliRunner().invoke(app, ["eval", "--dataset", "easy-vqa", "--limit", "1", "--mode", "full", "--out", str(tmp_path / "r")])
    assert out.exit_code == 2 and "--controller" in out.output
    assert not (tmp_path / "r" / "results.jsonl").exists()


def test_tool_calls_come_back_with_their_program(embedded_toolbox, sandbox, photo):
    first = sandbox.run('cups = ImagePatch(image).find("cup")', str(photo("coffee")))
    second = sandbox.run('n = len(cups)\nt = ImagePatch(image).find("spaceship")', str(photo("coffee")))
    assert [c.tool for c in first.calls] == ["find"] and first.calls[0].args == {"name": "cup"}
    assert [c.args["name"] for c in second.calls] == ["spaceship"]  # only this step's calls
    assert not hasattr(embedded_toolbox, "drain_calls")  # no shared list left to empty


def test_concurrent_recordings_see_only_their_own_calls(embedded_toolbox, photo):
    from PIL import Image

    img = Image.open(photo("bus")).convert("RGB")
    seen: dict[str, list[str]] = {}

    def work(name: str) -> None:
        with embedded_toolbox.recording() as calls:
            for _ in range(3):
                embedded_toolbox.find(img, name)
        seen[name] = [c.args["name"] for c in calls]

    threads = [threading.Thread(target=work, args=(n,)) for n in ("bus", "person")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"bus": ["bus"] * 3, "person": ["person"] * 3}


def test_episode_state_restores_memory_and_namespace(sandbox, photo):
    image = str(photo("coffee"))
    memory = StateMemoryBank("q")
    sandbox.reset()
    sandbox.run("x = 5", image)
    memory.add(MemoryEntry(1, "set x", "x = 5", "x = 5"))
    saved = EpisodeState.save(memory)
    sandbox.run("x = 7\ny = 1", image)
    memory.add(MemoryEntry(2, "change x", "x = 7\ny = 1", "x = 7"))
    replayed = saved.restore(memory, sandbox, image)
    assert [r.ok for r in replayed] == [True]
    assert [e.step for e in memory.entries] == [1]
    assert sandbox.run("final_answer = str(x)", image).final_answer == "5"
    gone = sandbox.run("z = y", image)  # y was set after the save: not rebuilt
    assert not gone.ok and "y" in gone.error


OPTIONS = ["Find the cup and ask its colour", "Ask the whole image the cup's colour", "Check whether the cup is red"]
CODE = {
    OPTIONS[0]: 'cups = ImagePatch(image).find("cup")\nfinal_answer = "red" if cups else "no cup found"',
    OPTIONS[1]: 'cups = ImagePatch(image).find("cup")\nfinal_answer = "white" if cups and cups[0].width > 0 else "red"',
    OPTIONS[2]: 'final_answer = "yes"',  # ill-typed for a colour question: refused by the shared step
}


def _reply(messages) -> str:
    system, user = messages[0].content, messages[-1].content
    if "You plan the next step" in system:
        return json.dumps({"instructions": [{"instruction": o, "probability": p} for o, p in zip(OPTIONS, [0.5, 0.3, 0.2])]})
    if "You write short Python programs" in system:
        return f"```python\n{CODE[user.split('Instruction:')[-1].strip().splitlines()[0]]}\n```"
    if "You decide whether" in system:
        return json.dumps({"decision": "continue", "answer": ""})
    return json.dumps({"answer": "red"})


class Pick:
    name = "pick"

    def __init__(self, i: int) -> None:
        self.i = i

    def select(self, options, probabilities, state):
        return self.i


def test_recorder_runs_the_same_step_the_loop_would(embedded_toolbox, sandbox, photo):
    from hydra_vr.controller.observation import ObservationEncoder
    from hydra_vr.datasets import Sample
    from hydra_vr.training.recorder import EpisodeRecorder
    from tests.test_controller_live import HashEmbedder

    sample = Sample("coffee-1", photo("coffee"), "What color is the cup?", "vqa", answers=["red"], answer="red")
    config = AgentConfig(num_options=3, max_steps=1, mode="one_step")
    loop_first_steps = []
    for i in range(3):  # what the loop does when it chooses option i at step 1
        agent = HydraAgent(config, ScriptedChat(rule=_reply), embedded_toolbox, sandbox, controller=Pick(i))
        loop_first_steps.append(agent.run(str(sample.image_path), sample.query).steps[0])
    with Sandbox(embedded_toolbox, timeout_s=15) as side:
        agent = HydraAgent(config, ScriptedChat(rule=_reply), embedded_toolbox, sandbox)
        episode = EpisodeRecorder(agent, ObservationEncoder(HashEmbedder(), 3), explore="all", side_runner=side).record(sample, "user")
    outcomes = episode.steps[0].outcomes
    for i, (outcome, step) in enumerate(zip(outcomes, loop_first_steps)):
        assert outcome.feedback == step.observation, i
        assert outcome.ok == bool(step.result["ok"]), i
    assert [o.answer for o in outcomes[1:]] == ["white", None]  # "yes" is no colour: no guess, as in the loop
    assert loop_first_steps[2].guess is None and "does not fit" in (loop_first_steps[2].extra.get("note") or "")


def test_generic_trace_serialises_and_prints_indented_by_depth(capsys):
    from hydra_vr.cli.ask_cmd import print_trace

    result = EpisodeResult("q?", "vqa", "img.png", "no_rl", "2", [], [
        StepTrace(1, "route to the counting agent", role="dispatcher", extra={"thought": "a counting question"}),
        StepTrace(2, "people = find('person')", role="agent:counting", depth=1, observation="4 patches in people"),
    ], strategy="hammr")
    data = json.loads(json.dumps(result.to_dict(), default=str))
    assert data["steps"][1].items() >= {"role": "agent:counting", "depth": 1, "action": "people = find('person')",
                                        "observation": "4 patches in people"}.items()
    assert data["strategy"] == "hammr" and data["steps"][0]["extra"] == {"thought": "a counting question"}
    print_trace(result)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "step 1: [dispatcher] route to the counting agent"
    assert "   thought: a counting question" in lines
    assert any(line.startswith("   step 2: [agent:counting] people = find('person')") for line in lines)
    assert any(line.startswith("      -> 4 patches in people") for line in lines)
