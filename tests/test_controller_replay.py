"""Replay env, reward, selection rule and episode format: no model, no sandbox (vectors are stored)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from hydra_vr.controller.dqn import select_action
from hydra_vr.controller.observation import ObservationParts, assemble, observation_dim
from hydra_vr.training.episodes import (
    EpisodeFormatError,
    OptionOutcome,
    RecordedEpisode,
    RecordedOption,
    RecordedRound,
    RecordedStep,
    iter_episodes,
    load_episodes,
)
from hydra_vr.training.evaluation import choice_headroom, evaluate_policy, planner_probability_policy, random_policy
from hydra_vr.training.replay_env import ReplayEnv
from hydra_vr.training.reward import final_reward, replan_reward, step_reward
from hydra_vr.training.settings import RewardConfig, load_training_config
from hydra_vr.training.train import converged

FIXTURE = Path(__file__).parent / "fixtures" / "episodes" / "synthetic_minilm_n3.jsonl"
D = 4


def vec(i: int) -> np.ndarray:
    v = np.zeros(D, dtype=np.float32)
    v[i % D] = 1.0
    return v


def opt(text: str, p: float, i: int) -> RecordedOption:
    return RecordedOption(text, p, vec(i))


def hand_episode() -> RecordedEpisode:
    """N = 3. Step 1: a REPLANned round, then 2 options (option 0 answers right, option 1 chosen,
    continues). Step 2: 3 options, only the chosen one executed (answers with metric 0.6)."""
    step1 = RecordedStep(1, "No steps yet.", vec(1), [
        RecordedRound([opt("look around", 0.5, 2), opt("guess", 0.5, 3)], -1),
        RecordedRound([opt("crop the cup", 0.3, 0), opt("find the cup", 0.7, 1)], 1),
    ], [OptionOutcome(True, "final_answer = red", True, "answer", "red", [], 1.0, True),
        OptionOutcome(True, "find('cup'): 1 found", True, "continue", None)])
    step2 = RecordedStep(2, "Step 1: find the cup", vec(2), [
        RecordedRound([opt("ask the colour", 0.6, 3), opt("count", 0.3, 0), opt("caption", 0.1, 1)], 0),
    ], [OptionOutcome(True, "final_answer = red", True, "answer", "red", [], 0.6, True), OptionOutcome(), OptionOutcome()])
    return RecordedEpisode(id="hand", query="What color is the cup?", task="vqa", gt={"answers": ["red"]}, embedding_name="test",
                           embedding_dim=D, num_options=3, max_steps=3, max_replans=2, query_vec=vec(0), steps=[step1, step2])


def test_reward_form_and_the_returns_it_implies():
    cfg = RewardConfig()
    assert [step_reward(cfg, t) for t in (1, 2, 3)] == [-1, -2, -3]
    assert final_reward(cfg, 1, 1.0) == 199 and final_reward(cfg, 2, 0.3) == 128 and final_reward(cfg, 1, 0.0) == -1
    assert final_reward(cfg, 3, None) == -3 and replan_reward(cfg) == -1
    right = [sum(step_reward(cfg, t) for t in range(1, T)) + final_reward(cfg, T, 1.0) for T in (1, 2, 3)]
    wrong = [sum(step_reward(cfg, t) for t in range(1, T)) + final_reward(cfg, T, 0.0) for T in (1, 2, 3)]
    assert right == [199, 197, 194] and wrong == [-1, -3, -6]


def test_replay_transitions():
    env = ReplayEnv([hand_episode()], RewardConfig())
    obs, info = env.reset(seed=0)
    assert info["action_mask"].tolist() == [True, True, False, True]  # round 0: 2 options, REPLAN allowed
    # An option of the REPLANned round was never executed: unknown, ends as a wrong answer.
    _, r, term, trunc, info = env.step(0)
    assert (r, term, trunc, info["outcome"], info["correct"]) == (-1, True, False, "unknown", 0.0)
    # An empty slot is invalid, not an IndexError.
    env.reset()
    _, r, term, _, info = env.step(2)
    assert (r, term, info["outcome"]) == (-100, True, "invalid")
    # REPLAN follows the recorded replan; then option 0 had been executed and answered right.
    obs0, _ = env.reset()
    obs1, r, term, _, info = env.step(3)
    assert r == -1 and not term and info["outcome"] == "replan" and not np.array_equal(obs0, obs1)
    _, r, term, _, info = env.step(0)
    assert (r, term, info["metric"], info["correct"], info["executed"]) == (199, True, 1.0, 1.0, 1)
    # The chosen option continues to step 2 (-1), whose chosen option answers with metric 0.6.
    env.reset()
    env.step(3)
    _, r, term, _, info = env.step(1)
    assert (r, term, info["step"]) == (-1, False, 2)
    # No recorded replan at step 2: same options again, the counter advances, the bound holds.
    o1, r, *_ = env.step(3)
    o2, r2, *_, info = env.step(3)
    assert r == r2 == -1 and np.array_equal(o1[:-3], o2[:-3]) and not info["action_mask"][3]
    _, r, term, _, info = env.step(0)
    assert r == 100 - 2 + 60 and term and info["executed"] == 2
    # An option of step 2 that was not executed (explore chosen): unknown.
    env.reset()
    env.step(3)
    env.step(1)
    _, r, term, _, info = env.step(1)
    assert (r, term, info["outcome"]) == (-2 + 100 - 100, True, "unknown")


def test_check_env_on_hand_episode_and_fixture():
    check_env(ReplayEnv([hand_episode()]), skip_render_check=True)
    episodes = load_episodes([FIXTURE])
    assert len(episodes) == 16 and {e.num_options for e in episodes} == {3}
    env = ReplayEnv(episodes)
    assert env.observation_space.shape == (observation_dim(384, 3),) == (5 * 384 + 9,)
    check_env(env, skip_render_check=True)


def test_observation_masks_missing_option_slots():
    parts = ObservationParts(vec(0), vec(1), np.stack([vec(2), vec(3)]))
    obs = assemble(parts, [0.7, 0.3], 3, step=2, replans=1, max_replans=1)
    assert obs.shape == (observation_dim(D, 3),)
    slots = obs[2 * D: 5 * D].reshape(3, D)
    assert slots[2].tolist() == [0.0] * D and slots[0].tolist() == vec(2).tolist()
    probs, mask, extra = obs[5 * D: 5 * D + 3], obs[5 * D + 3: 5 * D + 6], obs[-3:]
    assert probs.tolist() == pytest.approx([0.7, 0.3, 0.0]) and mask.tolist() == [1, 1, 0]
    assert extra.tolist() == pytest.approx([0.2, 0.1, 0.0])


def test_selection_rule_q_times_p():
    # Q far apart (reward units): the network overrides the planner.
    assert select_action(np.array([199.0, -1.0, -1.0, -10.0]), [0.1, 0.8, 0.1], 3, replan_allowed=True, temperature=2.0) == 0
    # Near tie: the planner's probability decides.
    assert select_action(np.array([150.0, 150.5, 0.0, 0.0]), [0.8, 0.2, 0.0], 3, replan_allowed=True, temperature=2.0) == 0
    # REPLAN only on Q, only when above every option by more than T, only while allowed.
    q = np.array([5.0, 4.0, 0.0, 7.5])
    assert select_action(q, [0.5, 0.5], 3, replan_allowed=True, temperature=2.0) == 3
    assert select_action(np.array([5.0, 4.0, 0.0, 6.0]), [0.5, 0.5], 3, replan_allowed=True, temperature=2.0) == 0
    assert select_action(q, [0.5, 0.5], 3, replan_allowed=False, temperature=2.0) == 0
    # Fewer options than slots: a large Q in an empty slot is ignored; no options: REPLAN.
    assert select_action(np.array([1.0, 2.0, 500.0, -5.0]), [0.5, 0.5], 3, replan_allowed=False, temperature=2.0) == 1
    assert select_action(np.zeros(4), [], 3, replan_allowed=False, temperature=2.0) == 3
    # Without probabilities: plain argmax over the filled slots.
    assert select_action(np.array([1.0, 2.0, 9.0, 0.0]), [0.9, 0.1], 3, replan_allowed=False, temperature=2.0,
                         use_probabilities=False) == 1


def whole_first_episode(whole_continues: bool = False) -> RecordedEpisode:
    """N = 3. Step 1 offers the whole question (slot 0) beside a planner option; both were executed. The whole
    question answers wrong (metric 0), the planner's option (chosen) continues to step 2, which answers right;
    with ``whole_continues``, the whole question was the chosen option and continued instead."""
    from hydra_vr.agent.strategies.hydra import WHOLE_QUERY

    whole = (OptionOutcome(True, "no typed answer", True, "continue", None) if whole_continues
             else OptionOutcome(True, "final_answer = blue", True, "answer", "blue", [], 0.0, True))
    step1 = RecordedStep(1, "No steps yet.", vec(1), [
        RecordedRound([opt(WHOLE_QUERY, 0.5, 3), opt("find the cup", 0.5, 2)], 0 if whole_continues else 1),
    ], [whole, OptionOutcome(True, "find('cup'): 1 found", True, "continue", None)])
    step2 = RecordedStep(2, "Step 1: find the cup", vec(2), [RecordedRound([opt("ask the colour", 1.0, 0)], 0)],
                         [OptionOutcome(True, "final_answer = red", True, "answer", "red", [], 1.0, True)])
    return RecordedEpisode(id="whole", query="What color is the cup?", task="vqa", gt={"answers": ["red"]}, embedding_name="test",
                           embedding_dim=D, num_options=3, max_steps=3, max_replans=0, query_vec=vec(0), steps=[step1, step2])


def test_the_whole_first_state_replays_recorded_outcomes_only():
    cfg = RewardConfig()
    env = ReplayEnv([whole_first_episode()], cfg, whole_first=True)
    obs, info = env.reset()
    # the whole question alone, and "ask the planner" open although the episode allows no replan
    assert info["action_mask"].tolist() == [True, False, False, True] and info["probabilities"] == [0.5]
    assert obs[-1] == 1.0 and np.array_equal(obs[2 * D: 3 * D], vec(3))
    _, r, term, _, info = env.step(0)  # its recorded outcome: a wrong answer at step 1
    assert (r, term, info["outcome"], info["correct"], info["plans"]) == (final_reward(cfg, 1, 0.0), True, "answer", 0.0, 0)
    env.reset()
    _, r, term, _, info = env.step(3)  # ask the planner: step 1's round, the replan budget untouched
    assert (r, term, info["outcome"], info["action_mask"].tolist()) == (replan_reward(cfg), False, "plan", [True, True, False, False])
    env.step(1)
    _, r, term, _, info = env.step(0)
    assert (r, term, info["correct"], info["plans"], info["executed"]) == (final_reward(cfg, 2, 1.0), True, 1.0, 2, 2)
    # the whole question chosen and continuing follows the recording to step 2
    env = ReplayEnv([whole_first_episode(whole_continues=True)], cfg, whole_first=True)
    env.reset()
    _, r, term, _, info = env.step(0)
    assert (r, term, info["step"]) == (step_reward(cfg, 1), False, 2)
    # off, or without the whole question offered, an episode starts at its first round as before
    assert ReplayEnv([whole_first_episode()], cfg).reset()[1]["action_mask"].tolist() == [True, True, False, False]
    assert ReplayEnv([hand_episode()], cfg, whole_first=True).reset()[1]["action_mask"].tolist() == [True, True, False, True]
    # the baselines: the planner's probability takes the whole question first (mode no_rl's choice), no plan paid
    stats = evaluate_policy("planner", planner_probability_policy(), [whole_first_episode()], cfg, whole_first=True)
    assert (stats.accuracy, stats.plans, stats.replans) == (0.0, 0.0, 0.0)
    stats = evaluate_policy("planner", planner_probability_policy(), [whole_first_episode()], cfg)
    assert stats.plans == 1.0


def test_choice_headroom_classifies_what_step_one_left_to_choose():
    # whole question wrong, the other option went on and a later step was right: nothing right at step 1
    later = choice_headroom([whole_first_episode()])
    assert (later.whole_right, later.rescued, later.sooner, later.later_right, later.none_right) == (0, 0, 0, 1, 0)
    assert later.oracle_accuracy == 1.0 and later.choice_matters == 0
    # no whole question offered, option 0 answered right at once while the chosen one went on
    rescued = choice_headroom([hand_episode()])
    assert (rescued.rescued, rescued.sooner, rescued.choice_matters) == (1, 0, 0)
    # the whole question went on while another option answered right at once: a step to save
    ep = whole_first_episode(whole_continues=True)
    ep.steps[0].outcomes[1] = OptionOutcome(True, "final_answer = red", True, "answer", "red", [], 1.0, True)
    sooner = choice_headroom([ep])
    assert (sooner.sooner, sooner.whole_right) == (1, 0)
    # right and wrong answers side by side at step 1: the choice matters; orthogonal option vectors
    ep.steps[0].outcomes[0] = OptionOutcome(True, "final_answer = blue", True, "answer", "blue", [], 0.0, True)
    mixed = choice_headroom([ep, whole_first_episode()])
    assert (mixed.episodes, mixed.rescued, mixed.later_right, mixed.choice_matters) == (2, 1, 1, 1)
    assert mixed.option_similarity == pytest.approx(0.0)


def test_baselines_on_fixture():
    episodes = load_episodes([FIXTURE])
    planner = evaluate_policy("planner", planner_probability_policy(), episodes)
    rand = evaluate_policy("random", random_policy(0), episodes)
    assert planner.episodes == rand.episodes == 16
    assert planner.unknown_rate == 0 and planner.invalid_rate == 0  # the recording followed the planner
    # Replaying the recording policy reproduces the recorded outcome of every episode.
    recorded = np.mean([e.result["metric"] for e in episodes])
    assert planner.accuracy == pytest.approx(recorded)
    assert rand.invalid_rate == 0


def test_episode_format_round_trip_and_damaged_files(tmp_path):
    ep = hand_episode()
    back = RecordedEpisode.from_dict(json.loads(json.dumps(ep.to_dict())))
    assert back.steps[0].rounds[1].options[0].instruction == "crop the cup"
    assert np.allclose(back.steps[1].memory_vec, ep.steps[1].memory_vec) and back.steps[0].outcomes[0].metric == 1.0
    path = tmp_path / "eps.jsonl"
    line = json.dumps(ep.to_dict())
    path.write_text(line + "\n" + line[:200])  # an interrupted recording: cut last line is skipped
    assert [e.id for e in iter_episodes(path)] == ["hand"]
    path.write_text(line[:200] + "\n" + line + "\n")
    with pytest.raises(EpisodeFormatError, match=":1: not JSON"):
        list(iter_episodes(path))
    path.write_text(json.dumps({**ep.to_dict(), "version": 99}) + "\n")
    with pytest.raises(EpisodeFormatError, match="version 99"):
        list(iter_episodes(path))
    # A set kept compressed reads the same; a damaged archive is a format error, not a crash.
    gz = tmp_path / "eps.jsonl.gz"
    gz.write_bytes(gzip.compress((line + "\n").encode()))
    assert [e.steps[0].rounds[1].options[0].instruction for e in iter_episodes(gz)] == ["crop the cup"]
    gz.write_bytes(gzip.compress((line + "\n").encode())[:-30])
    with pytest.raises(EpisodeFormatError, match="not a readable episode file"):
        list(iter_episodes(gz))
    other = json.dumps({**ep.to_dict(), "id": "x", "num_options": 5})
    path.write_text(line + "\n" + other + "\n")
    with pytest.raises(EpisodeFormatError, match="mix"):
        load_episodes([path])


def test_training_config_and_convergence():
    cfg = load_training_config()
    assert cfg.dqn.hidden == [512] and cfg.dqn.learning_rate == 1e-4 and cfg.dqn.batch_size == 128
    assert cfg.dqn.learning_starts == 1000 and cfg.dqn.exploration_initial_eps == 0.2 and cfg.reward.r1 == 100
    assert load_training_config(None, ["reward.alpha=50"]).reward.alpha == 50
    from hydra_vr.config import ConfigError

    with pytest.raises(ConfigError, match="alpah"):
        load_training_config(None, ["reward.alpah=50"])
    assert converged([10, 190, 191, 190.5, 190.2, 190.9], 5, 0.02)
    assert not converged([10, 100, 150, 180, 190], 5, 0.02) and not converged([190, 190], 5, 0.02)


def test_q_network_masks_invalid_actions():
    import torch
    from gymnasium import spaces

    from hydra_vr.controller.qnet import INVALID_Q, build_q_network
    from hydra_vr.training.masked_dqn import MaskedDQNPolicy

    n, dim = 3, observation_dim(D, 3)
    policy = MaskedDQNPolicy(spaces.Box(-1, 1, (dim,), np.float32), spaces.Discrete(n + 1), lambda _: 1e-4, net_arch=[8])
    two_options = assemble(ObservationParts(vec(0), vec(1), np.stack([vec(2), vec(3)])), [0.5, 0.5], n, step=1, replans=2, max_replans=2)
    obs = torch.as_tensor(two_options).unsqueeze(0)
    q = policy.q_net(obs)[0]
    assert q[2] == INVALID_Q and q[3] == INVALID_Q and q[0] > INVALID_Q and q[1] > INVALID_Q  # empty slot, no replan left
    assert policy.q_net_target(obs)[0][2] == INVALID_Q
    # The inference network built alone has the training policy's layout (checkpoints load by parameter name).
    alone = build_q_network(dim, n, [8])
    alone.load_state_dict({k[len("q_net."):]: v for k, v in policy.state_dict().items() if k.startswith("q_net.")}, strict=True)
    assert torch.equal(alone(obs), policy.q_net(obs))
