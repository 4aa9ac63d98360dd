"""The controller's Q-network: an observation to N + 1 Q-values, invalid actions masked.

It is stable-baselines3's MLP Q-network (the flat observation, ``net_arch`` hidden layers with
ReLU, N + 1 outputs) whose output for an empty option slot, or REPLAN past ``max_replans``, is the
constant :data:`INVALID_Q`, read from the mask stored in the observation
(:func:`hydra_vr.controller.observation.valid_action_mask`). So the greedy policy never picks one,
and, which matters more in training, the TD target ``r + gamma * max_a Q(s', a)`` never
bootstraps from an action that cannot be taken (plain DQN does, and the untrained values of those
actions inflated REPLAN on the synthetic set). Q of an invalid action is a constant, so the
(exploration) transitions that take one carry no gradient.

Training wraps this class in an SB3 DQN policy (``hydra_vr.training.masked_dqn``, online and target
network); inference builds it alone with :func:`build_q_network` and loads a checkpoint's weights
into it (:mod:`hydra_vr.controller.checkpoint`), so its parameter names are the checkpoint format.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.torch_layers import FlattenExtractor
from stable_baselines3.dqn.policies import QNetwork

from hydra_vr.controller.observation import valid_action_mask

INVALID_Q = -1.0e4


class MaskedQNetwork(QNetwork):
    """SB3's ``QNetwork`` with :data:`INVALID_Q` for the actions the observation marks invalid."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        q = super().forward(obs)
        valid = valid_action_mask(obs, int(self.action_space.n) - 1)
        return torch.where(valid, q, torch.full_like(q, INVALID_Q))


def build_q_network(obs_dim: int, num_options: int, net_arch: Sequence[int]) -> MaskedQNetwork:
    """An untrained network (CPU, eval mode) laid out as the training policy's ``q_net``."""
    # The bounds and dtype are those of the replay environment's observation space.
    observation_space = spaces.Box(-1.0, 1.0, (obs_dim,), np.float32)
    extractor = FlattenExtractor(observation_space)
    net = MaskedQNetwork(observation_space, spaces.Discrete(num_options + 1), extractor, extractor.features_dim,
                         net_arch=[int(h) for h in net_arch])
    net.set_training_mode(False)
    return net
