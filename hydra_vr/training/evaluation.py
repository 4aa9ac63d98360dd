"""Policies compared on recorded episodes: the trained DQN, planner probability, random.

A replay policy maps ``(observation, info)`` to an action of :class:`ReplayEnv`; ``info`` holds
``action_mask`` and ``probabilities``. :func:`evaluate_policy` replays every episode once (in
order) and reports mean reward, accuracy and mean executed steps; an episode that reaches an
unknown continuation counts as not correct and is counted in ``unknown_rate``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hydra_vr.training.episodes import RecordedEpisode
from hydra_vr.training.replay_env import ReplayEnv
from hydra_vr.training.settings import RewardConfig

ReplayPolicy = Callable[[np.ndarray, dict[str, Any]], int]


@dataclass
class PolicyStats:
    policy: str
    episodes: int
    mean_reward: float
    accuracy: float
    mean_steps: float
    replans: float  # mean REPLANs per episode (asking the planner from the whole-first state is not one)
    unknown_rate: float
    invalid_rate: float
    plans: float = 0.0  # mean planner calls per episode (rounds of options shown)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def planner_probability_policy() -> ReplayPolicy:
    """The most probable valid option (first on ties), never REPLAN: the loop's no-RL choice."""

    def act(obs: np.ndarray, info: dict[str, Any]) -> int:
        probs = info["probabilities"]
        valid = [i for i in range(len(probs)) if info["action_mask"][i]]
        return max(valid, key=lambda i: (probs[i], -i))

    return act


def random_policy(seed: int = 0) -> ReplayPolicy:
    """A uniformly random valid option, never REPLAN (like ``RandomController``)."""
    rng = random.Random(seed)

    def act(obs: np.ndarray, info: dict[str, Any]) -> int:
        mask = info["action_mask"]
        return rng.choice([i for i in range(len(mask) - 1) if mask[i]])

    return act


def evaluate_policy(name: str, policy: ReplayPolicy, episodes: Sequence[RecordedEpisode],
                    reward: RewardConfig | None = None, *, whole_first: bool = False) -> PolicyStats:
    """``whole_first``: the replay's whole-first state (:class:`ReplayEnv`), as the controller was trained."""
    env = ReplayEnv(episodes, reward, order="cycle", whole_first=whole_first)
    totals, correct, steps, replans, plans, unknown, invalid = [], [], [], [], [], 0, 0
    for index in range(len(env.episodes)):
        obs, info = env.reset(options={"episode": index})
        total, n_replans, done = 0.0, 0, False
        while not done:
            obs, r, terminated, truncated, info = env.step(policy(obs, info))
            n_replans += info.get("outcome") == "replan"
            total += r
            done = terminated or truncated
        totals.append(total)
        correct.append(info["correct"])
        steps.append(info["executed"])
        replans.append(n_replans)
        plans.append(info["plans"])
        unknown += info["outcome"] == "unknown"
        invalid += info["outcome"] == "invalid"
    n = len(totals)
    return PolicyStats(name, n, float(np.mean(totals)), float(np.mean(correct)), float(np.mean(steps)),
                       float(np.mean(replans)), unknown / n, invalid / n, float(np.mean(plans)))


def dqn_policy(q_net: Any, num_options: int, *, reward_scale: float, temperature: float,
               use_probabilities: bool = True) -> ReplayPolicy:
    """A Q-network (a checkpoint's, or a DQN's ``policy.q_net``) with the rule of :func:`hydra_vr.controller.dqn.select_action`."""
    from hydra_vr.controller.dqn import q_values, select_action

    def act(obs: np.ndarray, info: dict[str, Any]) -> int:
        mask = info["action_mask"]
        return select_action(q_values(q_net, obs, reward_scale), info["probabilities"], num_options,
                             replan_allowed=bool(mask[-1]), temperature=temperature, use_probabilities=use_probabilities)

    return act
