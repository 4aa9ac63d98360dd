"""The SB3 DQN policy that trains the controller's masked Q-network.

Both the online and the target network are :class:`hydra_vr.controller.qnet.MaskedQNetwork` (why
invalid actions are masked in the network: see that module). Saved models refer to this class
(``model.zip`` pickles it for ``DQN.load``); it must stay importable under this name.
"""

from __future__ import annotations

from typing import Any

from stable_baselines3.dqn.policies import DQNPolicy, QNetwork

from hydra_vr.controller.qnet import MaskedQNetwork


class MaskedDQNPolicy(DQNPolicy):
    def make_q_net(self) -> QNetwork:
        net_args: dict[str, Any] = self._update_features_extractor(self.net_args, features_extractor=None)
        return MaskedQNetwork(**net_args).to(self.device)
