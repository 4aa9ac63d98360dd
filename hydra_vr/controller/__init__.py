"""Controllers: which planner option to execute next (or ask the planner again)."""

from hydra_vr.controller.base import (
    REPLAN,
    Controller,
    ControllerState,
    PlannerProbabilityController,
    RandomController,
    default_controller_registry,
)

__all__ = [
    "REPLAN", "Controller", "ControllerState", "PlannerProbabilityController", "RandomController",
    "default_controller_registry",
]
