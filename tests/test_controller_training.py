"""DQN training on a synthetic recorded set (real MiniLM embeddings), checkpoints, the inference controller."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from hydra_vr.config import ConfigError, load_config
from hydra_vr.controller.base import REPLAN, ControllerState
from hydra_vr.controller.checkpoint import CheckpointError, CheckpointMeta, CheckpointMismatchError, load_checkpoint
from hydra_vr.controller.dqn import DQNController, q_values
from hydra_vr.controller.observation import ObservationEncoder
from hydra_vr.training.evaluation import dqn_policy, evaluate_policy, planner_probability_policy, random_policy
from hydra_vr.training.replay_env import ReplayEnv
from hydra_vr.training.settings import load_training_config
from hydra_vr.training.synthetic import synthetic_episodes
from hydra_vr.training.train import calibrate_temperature, split_episodes, train_controller

FIXTURE = Path(__file__).parent / "fixtures" / "episodes" / "synthetic_minilm_n3.jsonl"
FAST = ["dqn.learning_starts=200", "dqn.train_freq=2", "early_stop.eval_interval=500", "early_stop.min_timesteps=100000"]


@pytest.fixture(scope="module")
def minilm():
    from hydra_vr.llm.minilm import MiniLMEmbedder

    return MiniLMEmbedder()


@pytest.fixture(scope="module")
def trained(minilm, tmp_path_factory):
    episodes = synthetic_episodes(320, ObservationEncoder(minilm, 5), seed=3)
    train, test = split_episodes(episodes, 0.25, seed=0)
    out = tmp_path_factory.mktemp("ckpt") / "dqn"
    result = train_controller(train, load_training_config(None, FAST), out, total_timesteps=1500)
    return result, train, test


def test_trained_policy_beats_random_and_planner_on_held_out(trained):
    result, _, test = trained
    ck = load_checkpoint(result.checkpoint)
    dqn = evaluate_policy("dqn", dqn_policy(ck.q_net, 5, reward_scale=ck.meta.reward_scale, temperature=ck.meta.q_temperature), test)
    planner = evaluate_policy("planner", planner_probability_policy(), test)
    rand = evaluate_policy("random", random_policy(0), test)
    assert result.timesteps == 1500  # its speed is benchmarks/ work, not a test's
    assert dqn.accuracy >= rand.accuracy + 0.25 and dqn.mean_reward >= rand.mean_reward + 40
    assert dqn.accuracy >= planner.accuracy + 0.15 and dqn.mean_steps <= planner.mean_steps
    assert dqn.invalid_rate == 0
    assert result.curve is not None and result.curve.stat().st_size > 10_000
    assert [h["timesteps"] for h in result.history] == [500, 1000, 1500]


def test_checkpoint_round_trip_and_controller(trained, minilm):
    result, train, _ = trained
    meta = json.loads((result.checkpoint / "meta.json").read_text())
    assert meta["embedding"] == {"name": "minilm:all-MiniLM-L6-v2", "dim": 384} and meta["num_options"] == 5
    assert meta["obs_dim"] == 7 * 384 + 13 and meta["reward"]["r1"] == 100 and meta["training"]["timesteps"] == 1500
    assert meta["whole_first"] is True  # trained on the whole-first decision: the loop will ask it before planning
    # the packaged settings calibrate T on the validation episodes: the shipped T is the largest whose reward is
    # within one answer (2 * alpha / episodes) of the best, and its validation row is the one kept
    sweep = meta["training"]["temperature_sweep"]
    assert [row["q_temperature"] for row in sweep] == [2, 5, 10, 20, 40, 80]
    best = max(row["mean_reward"] for row in sweep)
    one_answer = 2 * meta["reward"]["alpha"] / meta["training"]["validation_episodes"]
    assert meta["q_temperature"] == max(row["q_temperature"] for row in sweep if row["mean_reward"] >= best - one_answer - 1e-9)
    kept = next(row for row in sweep if row["q_temperature"] == meta["q_temperature"])
    assert meta["training"]["validation"]["mean_reward"] == pytest.approx(kept["mean_reward"]) == result.validation.mean_reward
    ck = load_checkpoint(result.checkpoint, embedding_name=minilm.name, embedding_dim=384, num_options=5)
    env = ReplayEnv(train)
    obs, _ = env.reset(seed=1)
    from stable_baselines3 import DQN

    original = DQN.load(str(result.checkpoint / "model.zip"), device="cpu")
    assert np.allclose(q_values(ck.q_net, obs, 0.01), q_values(original.policy.q_net, obs, 0.01))

    cfg = load_config("default")
    controller = DQNController(result.checkpoint, cfg, embedder=minilm)
    state = ControllerState(query="What color is that bus?", memory_text="No steps yet.", step=1, max_replans=0)
    options = ["Find the bus", "Crop the bus and ask what color it is", "Guess the answer from the image caption"]
    assert controller.select(options, [0.6, 0.1, 0.3], state) == 1  # the learnt rule beats the planner's favourite
    assert controller.whole_first
    older = {k: v for k, v in meta.items() if k != "whole_first"}  # a checkpoint from before the decision existed
    assert not CheckpointMeta.from_dict(older).whole_first
    # Fewer options than the N = 5 slots: always a filled slot, never an index error; none: REPLAN.
    assert controller.select(options[:1], [1.0], state) == 0
    assert controller.select([], [], state) == REPLAN


def test_mismatched_checkpoint_is_refused(trained, minilm, tmp_path):
    result, *_ = trained
    cfg = load_config("default", ["agent.num_options=3"])
    with pytest.raises(CheckpointMismatchError, match=r"N = 5 \(checkpoint\) vs 3"):
        DQNController(result.checkpoint, cfg, embedder=minilm)

    class OtherEmbedder:
        name, dim = "openai:text-embedding-3-small", 1536

    with pytest.raises(CheckpointMismatchError, match="text-embedding-3-small.*dimension 384 \\(checkpoint\\) vs 1536"):
        DQNController(result.checkpoint, load_config("default"), embedder=OtherEmbedder())
    # meta.json and the weights must agree; a directory without meta.json is not a checkpoint.
    bad = tmp_path / "bad"
    shutil.copytree(result.checkpoint, bad)
    meta = json.loads((bad / "meta.json").read_text())
    meta["num_options"] = 4
    (bad / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="disagrees with meta.json"):
        load_checkpoint(bad)
    with pytest.raises(CheckpointError, match="no meta.json"):
        load_checkpoint(tmp_path)


def test_train_controller_cli(tmp_path):
    from hydra_vr.cli.main import app

    out = tmp_path / "ckpt"
    res = CliRunner().invoke(app, ["train-controller", "--episodes", str(FIXTURE), "--out", str(out), "--timesteps", "300",
                                   "--set", "dqn.learning_starts=100", "--set", "early_stop.eval_interval=100", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "16 episodes (minilm:all-MiniLM-L6-v2, 384-d, N = 3)" in res.output and "planner_probability" in res.output
    assert "selection margin T = " in res.output and "ties go to the larger T" in res.output
    assert {p.name for p in out.iterdir()} == {"model.zip", "meta.json", "training_curve.png"}
    res = CliRunner().invoke(app, ["train-controller", "--episodes", str(tmp_path / "none.jsonl"), "--out", str(out)])
    assert res.exit_code == 2 and "not found" in res.output
    # eval refuses a checkpoint trained for N = 3 under the default N = 5 up front, not per sample
    res = CliRunner().invoke(app, ["eval", "--dataset", "easy-vqa", "--limit", "1", "--out", str(tmp_path / "run"),
                                   "--controller", str(out), "--no-progress"])
    assert res.exit_code == 2 and "N = 3 (checkpoint) vs 5" in res.output, res.output
    assert not (tmp_path / "run" / "results.jsonl").exists()


RECORDED = Path(__file__).parent / "fixtures" / "episodes" / "easyvqa_qwen05b_recorded.jsonl"


def test_real_recorded_episodes_replay_and_keep_best(tmp_path):
    """Episodes recorded by the real loop (0.5B GGUF, real tools): they replay, and a run that
    overfits them ends with the weights of its best validation evaluation."""
    from gymnasium.utils.env_checker import check_env

    from hydra_vr.training.episodes import load_episodes

    episodes = load_episodes([RECORDED])
    assert len(episodes) == 30 and {e.num_options for e in episodes} == {5}
    check_env(ReplayEnv(episodes), skip_render_check=True)
    # the recorded outcomes are the loop's own: replaying the planner's choice gives their accuracy
    assert 0.0 < evaluate_policy("planner", planner_probability_policy(), episodes).accuracy < 1.0

    sets = ["dqn.learning_starts=100", "dqn.train_freq=2", "early_stop.eval_interval=200", "early_stop.min_timesteps=100000",
            "selection.calibrate=[]"]  # the margin stays 2: the weights alone are compared
    kept = train_controller(episodes, load_training_config(None, sets), tmp_path / "kept", total_timesteps=1600, curve=False)
    last = train_controller(episodes, load_training_config(None, [*sets, "early_stop.keep_best=false"]), tmp_path / "last",
                            total_timesteps=1600, curve=False)
    rewards = [h["mean_reward"] for h in kept.history]
    assert len(rewards) == 8
    assert kept.validation.mean_reward == pytest.approx(max(rewards))
    assert kept.validation.mean_reward >= last.validation.mean_reward
    assert last.best_timesteps is None
    meta = json.loads((kept.checkpoint / "meta.json").read_text())
    best = meta["training"]["best_timesteps"]
    assert best == kept.best_timesteps and kept.history[[h["timesteps"] for h in kept.history].index(best)]["mean_reward"] == max(rewards)
    # the kept weights are what the checkpoint holds
    ck = load_checkpoint(kept.checkpoint)
    _, val = split_episodes(episodes, 0.2, seed=0)
    again = evaluate_policy("dqn", dqn_policy(ck.q_net, 5, reward_scale=ck.meta.reward_scale, temperature=ck.meta.q_temperature), val)
    assert again.mean_reward == pytest.approx(kept.validation.mean_reward)
    assert ck.meta.q_temperature == 2.0 and kept.temperature_sweep == []

    # Calibrating the margin on the same weights: the larger T wins a tie; every T's row is a real replay.
    cfg = load_training_config(None, ["selection.calibrate=[80, 2, 2.0, 10]"])
    assert cfg.selection.calibrate == [2.0, 10.0, 80.0]
    t, stats, sweep = calibrate_temperature(ck.q_net, 5, val, cfg)
    assert [row["q_temperature"] for row in sweep] == [2.0, 10.0, 80.0]
    assert sweep[0]["mean_reward"] == pytest.approx(kept.validation.mean_reward)
    best = max(row["mean_reward"] for row in sweep)
    one_answer = 2 * cfg.reward.alpha / len(val)  # rewards within one answer of the best are ties
    assert t == max(row["q_temperature"] for row in sweep if row["mean_reward"] >= best - one_answer - 1e-9)
    assert stats.mean_reward == next(row["mean_reward"] for row in sweep if row["q_temperature"] == t) and stats.policy == "dqn"
    exact = load_training_config(None, ["selection.calibrate=[80, 2, 10]", "selection.tie_episodes=0"])
    t0, stats0, _ = calibrate_temperature(ck.q_net, 5, val, exact)
    assert t0 == max(row["q_temperature"] for row in sweep if row["mean_reward"] == best) and stats0.mean_reward == best
    with pytest.raises(ConfigError, match="must be > 0"):
        load_training_config(None, ["selection.calibrate=[0, 2]"])


def test_a_margin_that_wins_by_less_than_one_validation_answer_is_a_tie(monkeypatch):
    # three margins replayed on 50 episodes: T = 2 leads T = 40 by 3 reward units, under one answer (2 * 100 / 50 = 4)
    from hydra_vr.training import train as train_mod
    from hydra_vr.training.evaluation import PolicyStats

    rewards = {2.0: 170.0, 10.0: 150.0, 40.0: 167.0}

    def fake_evaluate(name, policy, episodes, cfg):
        temp = policy.temperature
        return PolicyStats(name, len(episodes), rewards[temp], 0.8, 1.1, 0.0, 0.0, 0.0, 0.2)

    monkeypatch.setattr(train_mod, "_evaluate", fake_evaluate)
    monkeypatch.setattr(train_mod, "dqn_policy", lambda q_net, n, reward_scale, temperature: type("P", (), {"temperature": temperature})())
    val = [object()] * 50
    cfg = load_training_config(None, ["selection.calibrate=[2, 10, 40]"])
    assert calibrate_temperature(None, 5, val, cfg)[0] == 40.0
    strict = load_training_config(None, ["selection.calibrate=[2, 10, 40]", "selection.tie_episodes=0"])
    assert calibrate_temperature(None, 5, val, strict)[0] == 2.0
    rewards[2.0] = 172.0  # ahead by more than one answer: the smaller margin pays
    assert calibrate_temperature(None, 5, val, cfg)[0] == 2.0
