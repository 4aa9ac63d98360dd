"""Agent strategies: one protocol, one registry keyed by config name (``agent.strategy``).

Every strategy runs on the same stack: the LLM, the vision toolbox, the sandbox (through the shared
step :func:`hydra_vr.agent.step.run_step`), the answer types and the trace. A strategy declares its
options once, as a pydantic model; the config section ``agent.<name>`` is validated against it.

To add one: write a class with ``name``, ``summary``, ``Options`` and ``run(ctx, episode)`` and
register it (``default_strategy_registry().register(name, "module:Class")``, or add a line below).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from hydra_vr.agent.types import EpisodeResult, Task
from hydra_vr.answer_types import AnswerSpec
from hydra_vr.question.frame import QuestionFrame
from hydra_vr.registry import Registry

if TYPE_CHECKING:
    from hydra_vr.agent.loop import HydraAgent

STRATEGY_TARGETS = {
    "hydra": "hydra_vr.agent.strategies.hydra:HydraStrategy",
    "vipergpt": "hydra_vr.agent.strategies.vipergpt:ViperGPTStrategy",
    "avis": "hydra_vr.agent.strategies.avis:AvisStrategy",
    "hammr": "hydra_vr.agent.strategies.hammr:HammrStrategy",
    "hierva": "hydra_vr.agent.strategies.hierva:HierVAStrategy",
}


class StrategyOptions(BaseModel):
    """Base of every strategy's options: unknown keys are errors (a typo is not silently ignored)."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class Episode:
    """One (image, query) being worked on; strategies fill ``result``."""

    image_path: str
    query: str
    task: Task
    frame: QuestionFrame | None  # the question parsed once (VQA), None for grounding
    result: EpisodeResult

    @property
    def spec(self) -> AnswerSpec | None:
        """The expected answer type (VQA), None for grounding."""
        return self.frame.answer if self.frame is not None else None


class Strategy(Protocol):
    name: ClassVar[str]
    summary: ClassVar[str]  # one line for `hydra-vr strategies`
    Options: ClassVar[type[StrategyOptions]]

    def run(self, ctx: HydraAgent, episode: Episode) -> None:
        """Answer or ground ``episode`` with ``ctx``'s LLM, tools and sandbox; append steps to its trace."""
        ...


class StrategyConfigError(ValueError):
    """An unknown strategy, or options that do not validate."""


def default_strategy_registry() -> Registry[Any]:
    return Registry("agent strategy", STRATEGY_TARGETS)


def build_strategy(name: str, options: dict[str, Any] | None = None, registry: Registry[Any] | None = None) -> Any:
    """The strategy ``name`` with its options validated by its own model."""
    registry = registry or default_strategy_registry()
    if name not in registry:
        raise StrategyConfigError(f"unknown agent strategy {name!r}; available: {', '.join(registry.names())}")
    cls = registry.factory(name)
    try:
        opts = cls.Options.model_validate(options or {})
    except ValidationError as exc:
        raise StrategyConfigError(f"agent.{name} options: {exc}") from None
    return cls(opts)


def check_sections(sections: dict[str, Any], registry: Registry[Any] | None = None) -> None:
    """Every ``agent.<name>`` section names a strategy and validates against its options."""
    registry = registry or default_strategy_registry()
    for name, options in sections.items():
        if name not in registry:
            raise StrategyConfigError(f"agent.{name}: no agent strategy is called {name!r}; available: {', '.join(registry.names())}")
        try:
            registry.factory(name).Options.model_validate(options or {})
        except ValidationError as exc:
            raise StrategyConfigError(f"agent.{name} options: {exc}") from None


def strategy_table(registry: Registry[Any] | None = None) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, summary, option defaults) of every registered strategy, for `hydra-vr strategies`."""
    registry = registry or default_strategy_registry()
    rows = []
    for name in registry.names():
        cls = registry.factory(name)
        rows.append((name, cls.summary, cls.Options().model_dump()))
    return rows


__all__ = ["Episode", "STRATEGY_TARGETS", "Strategy", "StrategyConfigError", "StrategyOptions", "build_strategy", "check_sections",
           "default_strategy_registry", "strategy_table"]
