"""The real loop as a gymnasium environment: each decision of the controller is one env step.

``HydraAgent.run`` drives the loop and calls ``controller.select`` when it needs a decision; here
it runs in a worker thread whose controller hands the decision to :meth:`HydraLoopEnv.step` and
waits for the action. One ``reset`` starts one sample's episode (samples in order, cycling, or
at random with ``order="random"``). Actions and rewards are those of the replay env
(:mod:`hydra_vr.training.replay_env`, :mod:`hydra_vr.training.reward`): option slot i, or N for
REPLAN; the next decision at a later step gives ``-t`` for the executed step, at the same step
(a REPLAN) ``-replan_penalty``; the end of the loop gives the final reward of the answer's metric
(an error is a wrong answer); an empty slot or a REPLAN past ``max_replans`` aborts the episode
with ``invalid_reward``. Slow (LLM, tools): meant for online fine-tuning and for checks; training
normally replays recorded episodes.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from hydra_vr.agent.loop import HydraAgent
from hydra_vr.controller.base import REPLAN, ControllerState
from hydra_vr.controller.observation import ObservationEncoder
from hydra_vr.datasets import Sample
from hydra_vr.training.reward import final_reward, is_correct, replan_reward, reward_metric, step_reward
from hydra_vr.training.settings import RewardConfig


class _Abort(Exception):
    """Raised inside the loop's thread to end an episode the env no longer follows."""


_ABORT = object()


class _HandOff:
    """The controller the loop calls: posts the decision to the env, blocks for the action."""

    name = "gym"

    def __init__(self, to_env: queue.Queue[Any], to_agent: queue.Queue[Any]) -> None:
        self.to_env, self.to_agent = to_env, to_agent

    def select(self, options: Sequence[str], probabilities: Sequence[float], state: ControllerState) -> int:
        self.to_env.put(("decide", list(options), list(probabilities), state))
        action = self.to_agent.get()
        if action is _ABORT:
            raise _Abort()
        return int(action)


class HydraLoopEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, agent: HydraAgent, encoder: ObservationEncoder, samples: Sequence[Sample], dataset: str,
                 reward: RewardConfig | None = None, *, order: str = "cycle", timeout_s: float = 600.0) -> None:
        if not samples:
            raise ValueError("HydraLoopEnv needs at least one sample")
        self.agent, self.encoder, self.samples, self.dataset = agent, encoder, list(samples), dataset
        self.reward_cfg = reward or RewardConfig()
        self.order, self.timeout_s = order, timeout_s
        self.num_options = encoder.num_options
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (encoder.dim,), np.float32)
        self.action_space = gym.spaces.Discrete(self.num_options + 1)
        self._cursor = 0
        self._thread: threading.Thread | None = None
        self._to_env: queue.Queue[Any] = queue.Queue()
        self._to_agent: queue.Queue[Any] = queue.Queue()
        self._sample: Sample | None = None
        self._decision: tuple[list[str], list[float], ControllerState] | None = None
        self._obs = np.zeros(self.observation_space.shape, dtype=np.float32)
        self._executed = 0

    # ------------------------------------------------------------ helpers
    def _start(self, sample: Sample) -> None:
        self._to_env, self._to_agent = queue.Queue(), queue.Queue()
        handoff = _HandOff(self._to_env, self._to_agent)

        def work() -> None:
            saved = self.agent.controller
            self.agent.controller = handoff
            try:
                result = self.agent.run(str(sample.image_path), sample.query, sample.task)
            except BaseException as exc:  # noqa: BLE001 - reported to the env, which raises it
                self._to_env.put(("crash", exc))
            else:
                self._to_env.put(("done", result))
            finally:
                self.agent.controller = saved

        self._thread = threading.Thread(target=work, name="hydra-loop-env", daemon=True)
        self._thread.start()

    def _stop(self) -> None:
        """End a running episode: abort its pending decision, wait for the loop to return."""
        if self._thread is None:
            return
        while self._thread.is_alive():
            self._to_agent.put(_ABORT)
            self._thread.join(timeout=1.0)
        self._thread = None

    def _wait(self) -> tuple[Any, ...]:
        try:
            message = self._to_env.get(timeout=self.timeout_s)
        except queue.Empty:
            raise RuntimeError(f"the loop made no decision within {self.timeout_s:.0f} s") from None
        if message[0] == "crash":
            raise message[1]
        return message

    def _observe(self, message: tuple[Any, ...]) -> np.ndarray:
        _, options, probs, state = message
        self._decision = (options, probs, state)
        self._obs = self.encoder.encode(state.query, state.memory_text, options[: self.num_options], probs,
                                        step=state.step, replans=state.replans, max_replans=state.max_replans)
        return self._obs

    def action_mask(self) -> np.ndarray:
        mask = np.zeros(self.num_options + 1, dtype=bool)
        if self._decision is not None:
            options, _, state = self._decision
            mask[: min(len(options), self.num_options)] = True
            mask[self.num_options] = state.replans < state.max_replans
        return mask

    def _info(self, **extra: Any) -> dict[str, Any]:
        probs = self._decision[1] if self._decision else []
        return {"sample_id": self._sample.id if self._sample else None, "action_mask": self.action_mask(),
                "probabilities": list(probs), **extra}

    # ---------------------------------------------------------------- api
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._stop()
        for _ in range(len(self.samples)):
            if options and "sample" in options:
                index = int(options["sample"])
            elif self.order == "random":
                index = int(self.np_random.integers(len(self.samples)))
            else:
                index, self._cursor = self._cursor, self._cursor + 1
            self._sample = self.samples[index % len(self.samples)]
            self._executed = 0
            self._start(self._sample)
            message = self._wait()
            if message[0] == "decide":
                return self._observe(message), self._info()
            self._thread = None  # the loop ended before any decision (e.g. no usable plan): next sample
        raise RuntimeError("no sample reached a controller decision (the planner produced no options for any)")

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._decision is None or self._thread is None:
            raise RuntimeError("call reset() before step()")
        a, cfg = int(action), self.reward_cfg
        _, _, state = self._decision
        if not self.action_mask()[a]:
            self._stop()
            self._decision = None
            return self._obs.copy(), cfg.invalid_reward, True, False, self._info(outcome="invalid", metric=None, correct=0.0, executed=self._executed)
        replanned = a == self.num_options
        self._executed += not replanned
        self._to_agent.put(REPLAN if replanned else a)
        message = self._wait()
        if message[0] == "decide":
            next_state: ControllerState = message[3]
            same_step = next_state.step == state.step
            reward = replan_reward(cfg) if same_step and replanned else step_reward(cfg, state.step)
            return self._observe(message), reward, False, False, self._info(outcome="replan" if same_step else "continue")
        result = message[1]
        assert self._sample is not None
        metric = 0.0 if result.error else reward_metric(self._sample, self.dataset, result.answer, result.boxes)
        self._thread.join(timeout=self.timeout_s)
        self._thread, self._decision = None, None
        return self._obs.copy(), final_reward(cfg, state.step, metric), True, False, self._info(
            outcome="answer", metric=metric, correct=is_correct(self._sample.task, metric), executed=self._executed,
            answer=result.answer, boxes=result.boxes)

    def close(self) -> None:
        self._stop()
        super().close()
