"""The live env and the recorder on the real loop: scripted LLM, real sandbox, real embedded vision tools."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from hydra_vr.agent.loop import HydraAgent
from hydra_vr.config import AgentConfig
from hydra_vr.controller.observation import ObservationEncoder
from hydra_vr.datasets import Sample
from hydra_vr.llm.scripted import ScriptedChat
from hydra_vr.sandbox import Sandbox
from hydra_vr.training.episodes import RecordedEpisode
from hydra_vr.training.live_env import HydraLoopEnv
from hydra_vr.training.recorder import EpisodeRecorder
from hydra_vr.training.replay_env import ReplayEnv

OPTIONS = ["Find the cup", "Crop the cup and answer its colour", "Look for a giraffe"]
CODE = {
    "Find the cup": 'cups = ImagePatch(image).find("cup")',
    "Crop the cup and answer its colour": 'final_answer = "white"',
    "Look for a giraffe": 'giraffes = ImagePatch(image).find("giraffe")',
    "Ask what is on the saucer": 'final_answer = "black"',  # a wrong colour
}


class HashEmbedder:
    """A tiny deterministic bag-of-words embedder (16-d, normalised rows) standing in for MiniLM."""

    name, dim = "test:hash16", 16

    def embed(self, texts):
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                rows[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)


def _reply(messages) -> str:
    system, user = messages[0].content, messages[-1].content
    if "You plan the next step" in system:
        done = "Ask what is on the saucer" if "Step 1:" in user else None
        opts = [done] if done else OPTIONS
        return json.dumps({"instructions": [{"instruction": o, "probability": p} for o, p in zip(opts, [0.6, 0.3, 0.1])]})
    if "You write short Python programs" in system:
        instruction = user.split("Instruction:")[-1].strip().splitlines()[0]
        return f"```python\n{CODE[instruction]}\n```"
    if "You decide whether" in system:
        answer = re.findall(r"final_answer = '?(\w+)", user)
        return json.dumps({"decision": "answer", "answer": answer[-1]} if answer else {"decision": "continue", "answer": ""})
    return "white"  # the step-limit merge


@pytest.fixture(scope="module")
def sandboxes(embedded_toolbox):
    with Sandbox(embedded_toolbox, timeout_s=10) as main, Sandbox(embedded_toolbox, timeout_s=10) as side:
        yield main, side


@pytest.fixture
def agent(embedded_toolbox, sandboxes):
    chat = ScriptedChat(rule=_reply)
    return HydraAgent(AgentConfig(mode="full", num_options=3, max_steps=3, max_replans=1), chat, embedded_toolbox, sandboxes[0])


@pytest.fixture
def sample(photo):
    return Sample("coffee-1", photo("coffee"), "What color is the cup?", "vqa", answers=["white"], answer="white")


def test_live_env_runs_the_loop_and_passes_check_env(agent, sample):
    encoder = ObservationEncoder(HashEmbedder(), 3)
    env = HydraLoopEnv(agent, encoder, [sample], "user")
    try:
        obs, info = env.reset(seed=0)
        assert obs.shape == (5 * 16 + 9,) and info["action_mask"].tolist() == [True, True, True, True]
        _, r, term, _, info = env.step(0)  # "Find the cup": a non-final step 1
        assert (r, term, info["outcome"]) == (-1, False, "continue")
        assert info["action_mask"].tolist() == [True, False, False, True]  # step 2 offers one option
        _, r, term, _, info = env.step(0)
        assert term and info["answer"] == "black" and r == 100 - 2 - 100  # wrong answer at step 2
        env.reset()
        _, r, term, _, info = env.step(3)  # REPLAN at step 1: same step, small cost
        assert (r, term, info["outcome"], info["action_mask"][3]) == (-1, False, "replan", False)
        _, r, term, _, info = env.step(3)  # past max_replans: invalid, the loop is aborted
        assert (r, term, info["outcome"]) == (-100, True, "invalid")
        env.reset()
        _, r, term, _, info = env.step(1)
        assert (r, term, info["metric"], info["correct"]) == (199, True, 1.0, 1.0)
        check_env(env, skip_render_check=True)
    finally:
        env.close()
    assert agent.controller.name != "gym"  # the agent's own controller is back


def test_recorder_executes_every_option_and_replays(agent, sample, sandboxes):
    recorder = EpisodeRecorder(agent, ObservationEncoder(HashEmbedder(), 3), explore="all", side_runner=sandboxes[1])
    episode = recorder.record(sample, "user")
    episode = RecordedEpisode.from_dict(json.loads(json.dumps(episode.to_dict())))
    assert [s.step for s in episode.steps] == [1, 2] and episode.result["answer"] == "black"
    first = episode.steps[0]
    assert [o.instruction for o in first.executed.options] == OPTIONS and first.executed.choice == 0
    find, crop, giraffe = first.outcomes
    assert find.decision == "continue" and "find('cup'): 1 found" in find.feedback and not find.final
    assert (crop.recorded, crop.decision, crop.answer, crop.metric, crop.final) == (True, "answer", "white", 1.0, True)
    assert giraffe.recorded and giraffe.decision == "continue" and "giraffe" in giraffe.feedback
    last = episode.steps[1].outcomes[0]
    assert (last.final, last.answer, last.metric) == (True, "black", 0.0)
    # The side executions left the episode itself alone: step 2 saw only step 1's memory.
    assert "Find the cup" in episode.steps[1].memory and "giraffe" not in episode.steps[1].memory

    env = ReplayEnv([episode])
    check_env(env, skip_render_check=True)
    env.reset()
    _, r, term, _, info = env.step(1)  # the unchosen option that answered right
    assert (r, term, info["correct"]) == (199, True, 1.0)


def test_recorder_reuses_the_outcome_of_a_program_the_step_already_ran(embedded_toolbox, sandboxes, sample):
    # two instructions, one program: the second is not summarized again, and it shares the chosen option's outcome
    code = dict(CODE, **{"Locate the cup": CODE["Find the cup"]})
    decided: list[str] = []

    def reply(messages) -> str:
        system, user = messages[0].content, messages[-1].content
        if "You plan the next step" in system and "Step 1:" not in user:
            opts = ["Find the cup", "Locate the cup", "Crop the cup and answer its colour"]
            return json.dumps({"instructions": [{"instruction": o, "probability": p} for o, p in zip(opts, [0.6, 0.3, 0.1])]})
        if "You write short Python programs" in system:
            return f"```python\n{code[user.split('Instruction:')[-1].strip().splitlines()[0]]}\n```"
        if "You decide whether" in system:
            decided.append(user)
        return _reply(messages)

    agent = HydraAgent(AgentConfig(mode="full", num_options=3, max_steps=3, max_replans=1), ScriptedChat(rule=reply),
                       embedded_toolbox, sandboxes[0])
    recorder = EpisodeRecorder(agent, ObservationEncoder(HashEmbedder(), 3), explore="all", side_runner=sandboxes[1])
    episode = RecordedEpisode.from_dict(json.loads(json.dumps(recorder.record(sample, "user").to_dict())))
    find, locate, crop = episode.steps[0].outcomes
    assert (locate.recorded, locate.decision, locate.feedback) == (True, find.decision, find.feedback)
    assert crop.decision == "answer" and crop.answer == "white"
    # step 1: the chosen option and "Crop ..." were summarized, "Locate the cup" was not; then step 2's one option
    assert len(decided) == 3


def test_recorder_ends_the_whole_question_option_on_its_programs_typed_answer(embedded_toolbox, sandboxes, sample):
    from hydra_vr.agent.strategies.hydra import WHOLE_QUERY

    decided: list[str] = []

    def reply(messages) -> str:
        system, user = messages[0].content, messages[-1].content
        if "You write short Python programs" in system and "answers the query completely" in user:  # the one-program prompt
            # white against green: the red cup holds about as much white (its inside) as black (its shadows)
            return '```python\ncups = ImagePatch(image).find("cup")\nfinal_answer = cups[0].best_text_match(["white", "green"])\n```'
        if "You decide whether" in system:
            decided.append(user)
        return _reply(messages)

    agent = HydraAgent(AgentConfig(mode="full", num_options=3, max_steps=3, max_replans=1, hydra={"whole_query": 0.5}),
                       ScriptedChat(rule=reply), embedded_toolbox, sandboxes[0])
    recorder = EpisodeRecorder(agent, ObservationEncoder(HashEmbedder(), 3), explore="all", side_runner=sandboxes[1])
    episode = RecordedEpisode.from_dict(json.loads(json.dumps(recorder.record(sample, "user").to_dict())))
    first = episode.steps[0]
    options = [o.instruction for o in first.executed.options]
    assert options == [WHOLE_QUERY, *OPTIONS[:2]]
    whole = first.outcomes[0]
    assert (whole.recorded, whole.decision, whole.answer, whole.final, whole.metric) == (True, "answer", "white", True, 1.0)
    # summarized: the two planner options only (whichever was chosen), never the whole question's program
    assert len(decided) == 2 and not any("answers the query completely" in d for d in decided)


def test_rerun_whole_ends_a_stale_whole_question_option_with_its_fallbacks_answer(embedded_toolbox, sandboxes, photo):
    # An episode recorded before a failed whole-question program ran the fallback: its whole option said "continue"
    # and the loop went on. Re-run with this code, the fallback answers a place question from the cup's box.
    from hydra_vr.agent.strategies.hydra import WHOLE_QUERY

    def reply(messages) -> str:
        system, user = messages[0].content, messages[-1].content
        if "You write short Python programs" in system and "answers the query completely" in user:
            return "```python\nfinal_answer = len(saucers)\n```"  # a NameError each time
        return _reply(messages)

    question = "Is the cup in the middle or at the edge of the picture?"
    sample = Sample("coffee-place", photo("coffee"), question, "vqa", answers=["middle"], answer="middle")
    agent = HydraAgent(AgentConfig(mode="full", num_options=3, max_steps=3, max_replans=1, hydra={"whole_query": 0.5}),
                       ScriptedChat(rule=reply), embedded_toolbox, sandboxes[0])
    recorder = EpisodeRecorder(agent, ObservationEncoder(HashEmbedder(), 3), explore="all", side_runner=sandboxes[1])
    fresh = recorder.record(sample, "user").to_dict()
    first = fresh["steps"][0]
    assert first["rounds"][-1]["options"][0]["instruction"] == WHOLE_QUERY and first["rounds"][-1]["choice"] == 0
    answered = first["outcomes"][0]
    assert answered["final"] and answered["answer"] in ("middle", "edge") and len(fresh["steps"]) == 1

    stale = json.loads(json.dumps(fresh))  # what the older code recorded: no answer, and a second step after it
    stale["steps"][0]["outcomes"][0].update(decision="continue", answer=None, metric=None, final=False)
    stale["steps"].append(dict(stale["steps"][0], step=2))
    stale["result"].update(answer="edge" if answered["answer"] == "middle" else "middle", steps=2)
    episode = RecordedEpisode.from_dict(stale)
    assert recorder.rerun_whole(episode, sample, "user")
    whole = episode.steps[0].outcomes[0]
    assert (whole.final, whole.decision, whole.answer) == (True, "answer", answered["answer"])
    assert whole.metric == answered["metric"] == float(answered["answer"] == "middle")
    assert len(episode.steps) == 1 and episode.result["answer"] == whole.answer and episode.result["whole_rerun"]
    # replayed, picking the whole question now ends the episode with that answer's reward
    env = ReplayEnv([episode])
    env.reset()
    _, _, term, _, info = env.step(0)
    assert term and info["outcome"] == "answer" and info["metric"] == whole.metric
    assert not recorder.rerun_whole(episode, sample, "user")  # an option that answered is left as it is


def test_record_rerun_whole_from_copies_a_set_and_refreshes_its_stale_whole_options(tmp_path, photo):
    import yaml
    from typer.testing import CliRunner

    from hydra_vr.cli.main import app
    from hydra_vr.training.episodes import iter_episodes

    data = tmp_path / "data.jsonl"
    questions = {"p": "Is the cup in the middle or at the edge of the picture?", "c": "What color is the cup?"}
    data.write_text("".join(json.dumps({"id": i, "image": str(photo("coffee")), "question": q, "answers": ["middle"]}) + "\n"
                            for i, q in questions.items()))
    plan = json.dumps({"instructions": [{"instruction": "Find the cup", "probability": 1.0}]})
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({"agent": {"mode": "no_rl", "max_steps": 2, "num_options": 2, "hydra": {"whole_query": 0.4}},
                                   "llm": {"backend": "scripted", "options": {"rules": [
                                       ["answers the query completely", "```python\nfinal_answer = len(saucers)\n```"],
                                       ["Instruction:", "```python\ncups = ImagePatch(image).find('cup')\n```"],
                                       ["Reply:", plan, "You plan"],
                                       [".", '{"decision": "continue", "answer": ""}', "You decide"]]}}}))
    base = ["record", "--dataset", "user", "--data-root", str(data), "--config", str(cfg), "--no-progress"]
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    first = CliRunner().invoke(app, [*base, "--out", str(old), "--epsilon", "0"])
    assert first.exit_code == 0, first.output
    lines = [json.loads(line) for line in old.read_text().splitlines()]
    for line in lines:  # as the older code left a whole option that failed: no answer
        line["steps"][0]["outcomes"][0].update(decision="continue", answer=None, metric=None, final=False)
    old.write_text("".join(json.dumps(line) + "\n" for line in lines))

    rerun = CliRunner().invoke(app, [*base, "--out", str(new), "--rerun-whole-from", str(old)])
    assert rerun.exit_code == 0, rerun.output
    assert "2 episodes in" in rerun.output and "of 2 episodes changed" in rerun.output
    place = {ep.id: ep for ep in iter_episodes(new)}["p"].steps[0].outcomes[0]
    assert place.final and place.answer in ("middle", "edge")  # the fallback placed the cup from its box
    again = CliRunner().invoke(app, [*base, "--out", str(new), "--rerun-whole-from", str(old)])
    assert "2 copied before, 0 to go" in again.output
    mute = tmp_path / "mute.yaml"  # an LLM that cannot answer: the run stops, saying what is kept
    mute.write_text(yaml.safe_dump({"agent": {"mode": "no_rl", "num_options": 2, "hydra": {"whole_query": 0.4}},
                                    "llm": {"backend": "scripted", "options": {"rules": []}}}))
    stopped = CliRunner().invoke(app, ["record", "--dataset", "user", "--data-root", str(data), "--config", str(mute),
                                       "--out", str(tmp_path / "m.jsonl"), "--rerun-whole-from", str(old), "--no-progress"])
    assert stopped.exit_code == 1 and "episodes done are saved in" in stopped.output and "rerun to resume" in stopped.output
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "x", "image": str(photo("coffee")), "question": "Why?", "answers": ["no"]}) + "\n")
    wrong = CliRunner().invoke(app, ["record", "--dataset", "user", "--data-root", str(other), "--config", str(cfg),
                                     "--out", str(tmp_path / "w.jsonl"), "--rerun-whole-from", str(old)])
    assert wrong.exit_code != 0 and "are not samples of this dataset" in wrong.output
