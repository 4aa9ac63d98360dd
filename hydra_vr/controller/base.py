"""The controller hook: given the planner's options, pick one or ask for new ones (REPLAN).

Every policy (planner probability, random, the DQN of hydra_vr.controller.dqn) implements
``select(options, probabilities, state) -> int``, returning an option index or :data:`REPLAN`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from hydra_vr.registry import Registry

REPLAN = -1


@dataclass
class ControllerState:
    """What a policy may look at besides the options."""

    query: str
    memory_text: str
    step: int
    replans: int = 0
    max_replans: int = 2
    history: list[str] = field(default_factory=list)  # instructions already executed


@runtime_checkable
class Controller(Protocol):
    name: str

    def select(self, options: Sequence[str], probabilities: Sequence[float], state: ControllerState) -> int: ...


class PlannerProbabilityController:
    """The no-RL policy: the option the planner gave the highest probability (first on ties)."""

    name = "planner_probability"

    def select(self, options: Sequence[str], probabilities: Sequence[float], state: ControllerState) -> int:
        if not options:
            return REPLAN
        return max(range(len(options)), key=lambda i: (probabilities[i], -i))


class RandomController:
    """Uniform choice among the options (a baseline); never replans."""

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        self._rng = random.Random(seed)

    def select(self, options: Sequence[str], probabilities: Sequence[float], state: ControllerState) -> int:
        return self._rng.randrange(len(options)) if options else REPLAN


def default_controller_registry() -> Registry:
    return Registry(
        "controller",
        {
            "planner_probability": PlannerProbabilityController,
            "random": RandomController,
            "dqn": "hydra_vr.controller.dqn:DQNController",
        },
    )
