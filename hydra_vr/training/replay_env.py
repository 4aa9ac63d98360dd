"""Offline replay of recorded episodes as a gymnasium environment (no LLM, tool or embedder call).

Actions are ``Discrete(N + 1)``: ``i < N`` executes option slot i, ``N`` is REPLAN. At recorded
step k (step index t), planner round r, the transitions are:

- the option the recording executed (the last round's ``choice``): its recorded continuation,
  i.e. step k + 1 with reward ``-t``, or the end of the episode (``final``) with the final reward
  of the episode's metric;
- another option whose execution was recorded (``explore all``) and ended the episode (the
  summarizer answered, or grounding found a box): terminal, final reward of its own metric;
- any other option ("unknown continuation": it was not executed, or it asked to continue and what
  would have followed was never run): the episode *ends* with the wrong-answer reward
  ``R1 - t - alpha``. This is the pessimism of offline RL (BCQ, CQL): values of actions the data
  never followed are not extrapolated, so the policy leaves the recorded trajectory only for
  outcomes that were actually observed (an answer that was scored). Alternatives considered: a
  truncation bootstrapping from the current state values an untried branch like the best option
  at hand (measured on the synthetic set: the policy then wandered into unknown branches in 30% of
  episodes); the option's own intermediate guess would pretend the summarizer had answered.
  Options of a round that was REPLANned are unknown the same way.
- REPLAN (while ``replans < max_replans``): reward ``-replan_penalty``; the next recorded round at
  this step when the recording replanned, else the same options again (a real planner samples new
  ones at temperature 0.7: the data cannot say which), with the replan counter advanced.
- an empty option slot, or REPLAN past the bound: ``invalid_reward`` and the episode ends.

With ``whole_first`` (a controller trained to choose before the planner is asked), an episode whose
first step offered the whole question (:data:`~hydra_vr.agent.strategies.hydra.WHOLE_QUERY`) starts in
one more state, the one the live loop shows before its first plan: that option alone, REPLAN meaning
"ask the planner". The option gives its recorded outcome at step 1 (as if picked from the first
round); REPLAN costs ``replan_penalty`` (a planner call) and leads to step 1's first round, the replan
budget untouched. The state is only offered where its outcome was recorded, so nothing is invented.

``info`` carries ``action_mask`` (N + 1 booleans), ``probabilities``, and at the end ``outcome``
(``answer`` / ``unknown`` / ``invalid``), ``metric``, ``correct``, ``executed`` (options run) and
``plans`` (planner rounds shown: the loop's planner calls).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from hydra_vr.agent.strategies.hydra import is_whole_query, whole_first_budget
from hydra_vr.controller.observation import ObservationParts, assemble, observation_dim
from hydra_vr.training.episodes import RecordedEpisode
from hydra_vr.training.reward import final_reward, is_correct, replan_reward, step_reward
from hydra_vr.training.settings import RewardConfig


class ReplayEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, episodes: Sequence[RecordedEpisode], reward: RewardConfig | None = None, *,
                 order: str = "random", whole_first: bool = False) -> None:
        usable = [ep for ep in episodes if ep.steps]
        if not usable:
            raise ValueError("no recorded episode with at least one step to replay")
        kinds = {(ep.embedding_dim, ep.num_options) for ep in usable}
        if len(kinds) != 1:
            raise ValueError(f"episodes differ in embedding dimension / N: {sorted(kinds)}")
        if order not in ("random", "cycle"):
            raise ValueError(f"order must be 'random' or 'cycle', not {order!r}")
        self.episodes = usable
        self.reward_cfg = reward or RewardConfig()
        self.order = order
        self.whole_first = whole_first
        self.embedding_dim, self.num_options = next(iter(kinds))
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (observation_dim(self.embedding_dim, self.num_options),), np.float32)
        self.action_space = gym.spaces.Discrete(self.num_options + 1)
        self._cursor = 0
        self._ep = usable[0]
        self._k = self._r = self._replans = self._executed = self._plans = 0
        self._whole: int | None = None  # in the whole-first state: the whole question's slot in step 1's last round

    # ------------------------------------------------------------ helpers
    @property
    def replan_action(self) -> int:
        return self.num_options

    @property
    def episode(self) -> RecordedEpisode:
        return self._ep

    def _round(self) -> Any:
        return self._ep.steps[self._k].rounds[self._r]

    def _whole_slot(self) -> int | None:
        """The whole question's slot in step 1's last round, when it was offered there and its outcome recorded."""
        step = self._ep.steps[0]
        for i, option in enumerate(step.rounds[-1].options[: self.num_options]):
            if is_whole_query(option.instruction):
                recorded = i < len(step.outcomes) and step.outcomes[i].recorded
                return i if recorded or i == step.executed.choice else None
        return None

    def _choices(self) -> tuple[np.ndarray, list[float]]:
        """The option vectors and probabilities the current state shows."""
        rnd = self._round()
        if self._whole is not None:
            return rnd.option_vecs[self._whole: self._whole + 1], [rnd.probabilities[self._whole]]
        return rnd.option_vecs, list(rnd.probabilities)

    def _max_replans(self) -> int:
        """The replan budget the current state shows (the whole-first state's, as the live loop shows it)."""
        return whole_first_budget(self._ep.max_replans) if self._whole is not None else self._ep.max_replans

    def _obs(self) -> np.ndarray:
        step = self._ep.steps[self._k]
        vecs, probs = self._choices()
        return assemble(ObservationParts(self._ep.query_vec, step.memory_vec, vecs), probs, self.num_options,
                        step=step.step, replans=self._replans, max_replans=self._max_replans())

    def action_mask(self) -> np.ndarray:
        mask = np.zeros(self.num_options + 1, dtype=bool)
        mask[: min(len(self._choices()[1]), self.num_options)] = True
        mask[self.num_options] = self._replans < self._max_replans()
        return mask

    def _info(self, **extra: Any) -> dict[str, Any]:
        return {"episode_id": self._ep.id, "step": self._ep.steps[self._k].step, "action_mask": self.action_mask(),
                "probabilities": self._choices()[1], **extra}

    def _end(self, outcome: str, metric: float | None) -> dict[str, Any]:
        return self._info(outcome=outcome, metric=metric, correct=is_correct(self._ep.task, metric), executed=self._executed,
                          plans=self._plans)

    # ---------------------------------------------------------------- api
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if options and "episode" in options:
            index = int(options["episode"])
        elif self.order == "cycle":
            index, self._cursor = self._cursor, self._cursor + 1
        else:
            index = int(self.np_random.integers(len(self.episodes)))
        self._ep = self.episodes[index % len(self.episodes)]
        self._k = self._r = self._replans = self._executed = 0
        self._whole = None
        if self.whole_first:
            self._whole = self._whole_slot()
            self._r = len(self._ep.steps[0].rounds) - 1 if self._whole is not None else 0
        self._plans = int(self._whole is None)  # planner rounds shown, the loop's planner calls
        return self._obs(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = int(action)
        cfg, step = self.reward_cfg, self._ep.steps[self._k]
        t = step.step
        if not self.action_mask()[a]:
            return self._obs(), cfg.invalid_reward, True, False, self._end("invalid", None)
        if self._whole is not None:  # the whole-first state
            a, self._whole = (a if a == self.replan_action else self._whole), None
            if a == self.replan_action:  # ask the planner: step 1's first round
                self._r, self._plans = 0, self._plans + 1
                return self._obs(), replan_reward(cfg), False, False, self._info(outcome="plan")
        elif a == self.replan_action:
            self._replans, self._plans = self._replans + 1, self._plans + 1
            if self._r + 1 < len(step.rounds):
                self._r += 1
            return self._obs(), replan_reward(cfg), False, False, self._info(outcome="replan")
        self._executed += 1
        last_round = self._r == len(step.rounds) - 1
        outcome = step.outcomes[a] if last_round and a < len(step.outcomes) else None
        if outcome is not None and outcome.recorded and outcome.final:
            return self._obs(), final_reward(cfg, t, outcome.metric), True, False, self._end("answer", outcome.metric)
        if last_round and a == step.executed.choice and self._k + 1 < len(self._ep.steps):
            self._k, self._r, self._replans, self._plans = self._k + 1, 0, 0, self._plans + 1
            return self._obs(), step_reward(cfg, t), False, False, self._info(outcome="continue")
        return self._obs(), final_reward(cfg, t, None), True, False, self._end("unknown", None)
