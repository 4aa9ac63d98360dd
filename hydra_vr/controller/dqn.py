"""The trained controller: Q-values of a DQN checkpoint combined with the planner's probabilities.

Selection rule (:func:`select_action`). With ``Q`` the network's values in reward units (the
training scale undone), the n <= N filled option slots, and p_i the planner's probabilities:

    REPLAN                          if allowed (replans < max_replans) and Q[REPLAN] > max_i Q[i] + T
    argmax_i softmax(Q[:n] / T)_i * p_i     otherwise (ties: the lower slot)

``T`` = ``q_temperature`` in reward units (default 2). Softmax makes the Q factor positive whatever
the sign of Q; a gap of a few T (a step's cost is 1-5 units, a right-vs-wrong answer 200) lets
the network overrule the planner, while options the network cannot tell apart are ranked by the
planner's probability. REPLAN has no planner probability, so it is taken on Q alone, only when
the network values it above every option by more than T: DQN's max-bootstrapping overestimates
an action that leads back to nearly the same state (a REPLAN whose new options were never
recorded), and the margin keeps small overestimates from buying a planner call.
Empty slots are masked, never indexed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hydra_vr.controller.base import REPLAN, ControllerState
from hydra_vr.controller.observation import ObservationEncoder


def select_action(q_values: np.ndarray, probabilities: Sequence[float], num_options: int, *, replan_allowed: bool,
                  temperature: float, use_probabilities: bool = True) -> int:
    """Action slot in ``0..num_options`` (``num_options`` = REPLAN) by the rule above."""
    n = min(len(probabilities), num_options)
    q = np.asarray(q_values, dtype=np.float64)
    if n == 0:
        return num_options
    q_opts = q[:n]
    if replan_allowed and q[num_options] > q_opts.max() + temperature:
        return num_options
    if not use_probabilities:
        return int(np.argmax(q_opts))
    z = (q_opts - q_opts.max()) / max(temperature, 1e-9)
    w = np.exp(z) / np.exp(z).sum()
    probs = np.clip(np.asarray(list(probabilities)[:n], dtype=np.float64), 0.0, None)
    probs = probs / probs.sum() if probs.sum() > 0 else np.full(n, 1.0 / n)
    return int(np.argmax(w * probs))


def q_values(q_net: Any, obs: np.ndarray, reward_scale: float) -> np.ndarray:
    """Q-values of one observation, in reward units, from a Q-network (:mod:`hydra_vr.controller.qnet`)."""
    import torch

    with torch.no_grad():
        q = q_net(torch.as_tensor(obs, dtype=torch.float32).unsqueeze(0))
    return q.squeeze(0).cpu().numpy() / reward_scale


class DQNController:
    """A controller from a ``hydra-vr train-controller`` checkpoint (built by ``factory.build_controller``).

    The embedder comes from ``config.embedding`` (or ``embedder``); a checkpoint trained with another
    embedding model or another ``agent.num_options`` is refused with :class:`CheckpointMismatchError`.
    """

    name = "dqn"

    def __init__(self, checkpoint: str | Path, config: Any = None, *, embedder: Any = None,
                 use_probabilities: bool = True) -> None:
        from hydra_vr.controller.checkpoint import load_checkpoint

        if embedder is None:
            if config is None:
                raise ValueError("DQNController needs a HydraConfig (for the embedder) or an embedder")
            from hydra_vr.llm import build_embedder

            embedder = build_embedder(config.embedding, config.cache_path)
        num_options = config.agent.num_options if config is not None else None
        loaded = load_checkpoint(checkpoint, embedding_name=embedder.name, embedding_dim=embedder.dim,
                                 num_options=num_options)
        self.q_net, self.meta = loaded.q_net, loaded.meta
        self.encoder = ObservationEncoder(embedder, self.meta.num_options, self.meta.memory_chars)
        self.use_probabilities = use_probabilities

    @property
    def whole_first(self) -> bool:
        """Trained to choose between the whole question and a plan before the planner is asked."""
        return self.meta.whole_first

    def q_values(self, options: Sequence[str], probabilities: Sequence[float], state: ControllerState) -> np.ndarray:
        obs = self.encoder.encode(state.query, state.memory_text, list(options)[: self.meta.num_options], probabilities,
                                  step=state.step, replans=state.replans, max_replans=state.max_replans)
        return q_values(self.q_net, obs, self.meta.reward_scale)

    def select(self, options: Sequence[str], probabilities: Sequence[float], state: ControllerState) -> int:
        if not options:
            return REPLAN
        action = select_action(self.q_values(options, probabilities, state), probabilities, self.meta.num_options,
                               replan_allowed=state.replans < state.max_replans, temperature=self.meta.q_temperature,
                               use_probabilities=self.use_probabilities)
        return REPLAN if action == self.meta.num_options else action
