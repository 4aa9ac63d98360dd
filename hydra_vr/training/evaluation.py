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

from hydra_vr.agent.strategies.hydra import is_whole_query
from hydra_vr.training.episodes import RecordedEpisode
from hydra_vr.training.replay_env import ReplayEnv
from hydra_vr.training.reward import is_correct
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


@dataclass
class ChoiceHeadroom:
    """What recorded episodes leave a controller to choose at step 1 (``explore="all"`` recordings).

    Each episode falls in one class by its first step's recorded outcomes (right: full credit): the
    whole question's program was right (``whole_right``); another option answered right where the whole
    question answered wrong or was not offered (``rescued``: accuracy a controller can win) or gave no
    answer and went on (``sooner``: steps it can save, and accuracy where the continuation went wrong);
    no option of step 1 answered right but a later step did (``later_right``); nothing right anywhere
    (``none_right``). ``choice_matters``: episodes whose step-1 answers disagree in correctness;
    ``oracle_accuracy``: the share with a right recorded answer anywhere (no policy on these recordings
    does better); ``option_similarity``: the mean pairwise cosine of step 1's option embeddings (near 1:
    the planner offered near duplicates).
    """

    episodes: int
    whole_right: int
    rescued: int
    sooner: int
    later_right: int
    none_right: int
    choice_matters: int
    oracle_accuracy: float
    option_similarity: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _right(ep: RecordedEpisode, outcome: Any) -> bool:
    return bool(outcome.recorded and outcome.final and is_correct(ep.task, outcome.metric) >= 1.0)


def _mean_cosine(vecs: np.ndarray) -> float | None:
    if len(vecs) < 2:
        return None
    unit = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-8)
    sims = unit @ unit.T
    return float(sims[np.triu_indices(len(vecs), 1)].mean())


def choice_headroom(episodes: Sequence[RecordedEpisode]) -> ChoiceHeadroom:
    """Classify recorded episodes by what their first step's options gave (see :class:`ChoiceHeadroom`)."""
    counts = {"whole_right": 0, "rescued": 0, "sooner": 0, "later_right": 0, "none_right": 0}
    matters, oracle, sims = 0, 0, []
    usable = [ep for ep in episodes if ep.steps]
    for ep in usable:
        first = ep.steps[0]
        options = first.executed.options
        right = [_right(ep, o) for o in first.outcomes]
        whole = [i for i, o in enumerate(options) if is_whole_query(o.instruction)]
        answered = [r for o, r in zip(first.outcomes, right) if o.recorded and o.final]
        later = any(_right(ep, o) for s in ep.steps[1:] for o in s.outcomes)
        whole_out = first.outcomes[whole[0]] if whole and whole[0] < len(first.outcomes) else None
        if whole_out is not None and right[whole[0]]:
            counts["whole_right"] += 1
        elif any(right):
            counts["sooner" if whole_out is not None and whole_out.recorded and not whole_out.final else "rescued"] += 1
        elif later:
            counts["later_right"] += 1
        else:
            counts["none_right"] += 1
        matters += len(set(answered)) > 1
        oracle += any(right) or later
        sim = _mean_cosine(first.executed.option_vecs)
        if sim is not None:
            sims.append(sim)
    n = max(len(usable), 1)
    return ChoiceHeadroom(len(usable), **counts, choice_matters=matters, oracle_accuracy=oracle / n,
                          option_similarity=float(np.mean(sims)) if sims else float("nan"))
