"""A DQN policy whose Q-network masks invalid actions using the mask stored in the observation.

An empty option slot, or REPLAN past ``max_replans``, gets the constant Q ``INVALID_Q`` from both
the online and the target network. So the greedy policy never picks one, and, which matters more,
the TD target ``r + gamma * max_a Q(s', a)`` never bootstraps from an action that cannot be taken
(plain DQN does, and the untrained values of those actions inflated REPLAN on the synthetic set).
Q of an invalid action is a constant, so the (exploration) transitions that take one carry no
gradient. Saved models refer to this class; it must stay importable under this name.
"""

from __future__ import annotations

from typing import Any

import torch
from stable_baselines3.dqn.policies import DQNPolicy, QNetwork

from hydra_vr.controller.observation import valid_action_mask

INVALID_Q = -1.0e4


class MaskedQNetwork(QNetwork):
    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        q = super().forward(obs)
        valid = valid_action_mask(obs, int(self.action_space.n) - 1)
        return torch.where(valid, q, torch.full_like(q, INVALID_Q))


class MaskedDQNPolicy(DQNPolicy):
    def make_q_net(self) -> QNetwork:
        net_args: dict[str, Any] = self._update_features_extractor(self.net_args, features_extractor=None)
        return MaskedQNetwork(**net_args).to(self.device)
