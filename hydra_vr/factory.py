"""Build the runtime objects (toolbox, LLM, embedder) from a HydraConfig, lazily."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from hydra_vr.api.toolbox import VisionToolbox
from hydra_vr.config import HydraConfig

T = TypeVar("T")


def lazy(factory: Callable[[], T]) -> Callable[[], T]:
    """A provider that builds its object on first call and returns the same one afterwards."""
    lock = threading.Lock()
    box: list[T] = []

    def provider() -> T:
        with lock:
            if not box:
                box.append(factory())
            return box[0]

    return provider


def llm_provider(cfg: HydraConfig) -> Callable[[], Any]:
    def build() -> Any:
        from hydra_vr.llm import build_chat_model

        return build_chat_model(cfg.llm, cfg.cache_path)

    return lazy(build)


def embedder_provider(cfg: HydraConfig) -> Callable[[], Any]:
    def build() -> Any:
        from hydra_vr.llm import build_embedder

        return build_embedder(cfg.embedding, cfg.cache_path)

    return lazy(build)


def build_toolbox(cfg: HydraConfig, llm: Callable[[], Any] | None = None, embedder: Callable[[], Any] | None = None) -> VisionToolbox:
    """A toolbox whose LLM and embedder are built only if a tool needs them, reading questions with the
    question frame's parser."""
    from hydra_vr.question.frame import parse

    return VisionToolbox(
        cfg.vision,
        cache_dir=cfg.cache_path,
        llm=llm or llm_provider(cfg),
        embedder=embedder or embedder_provider(cfg),
        read_question=parse,
    )


def build_controller(cfg: HydraConfig, checkpoint: str | None = None) -> Any:
    """The controller for ``cfg.agent.mode``: a DQN checkpoint when given, else in mode full the one the package
    ships (:func:`~hydra_vr.controller.checkpoint.shipped_checkpoint`), else the planner-probability policy."""
    from hydra_vr.controller import PlannerProbabilityController, default_controller_registry

    checkpoint = controller_checkpoint(cfg, checkpoint)
    if checkpoint:
        return default_controller_registry().create("dqn", checkpoint=checkpoint, config=cfg)
    return PlannerProbabilityController()


def controller_checkpoint(cfg: HydraConfig, given: str | None) -> str | None:
    """The checkpoint a run uses: ``given`` (--controller), else in mode full the shipped one; None outside mode
    full. Mode full with neither is an error: the planner's policy under the RL controller's name would
    mislabel every result."""
    from hydra_vr.config import ConfigError
    from hydra_vr.controller.checkpoint import shipped_checkpoint

    if given or cfg.agent.mode != "full":
        return given
    shipped = shipped_checkpoint()
    if shipped is None:
        raise ConfigError("mode full runs the trained RL controller, and this install ships none: give a checkpoint "
                          "(--controller CKPT, made by hydra-vr train-controller), or use mode no_rl for the planner's "
                          "probabilities")
    return str(shipped)


def build_agent(
    cfg: HydraConfig,
    *,
    controller_checkpoint: str | None = None,
    example_set: str | None = None,
    llm: Any = None,
    toolbox: VisionToolbox | None = None,
    runner: Any = None,
) -> Any:
    """A ready HydraAgent: one LLM shared by the roles and the tools, a toolbox, a sandbox."""
    from hydra_vr.agent.loop import HydraAgent
    from hydra_vr.sandbox import Sandbox

    llm_get = (lambda: llm) if llm is not None else llm_provider(cfg)
    chat = llm_get()
    toolbox = toolbox or build_toolbox(cfg, llm=lambda: chat)
    runner = runner or Sandbox(toolbox, config=cfg.sandbox)
    controller = build_controller(cfg, controller_checkpoint)
    return HydraAgent(cfg.agent, chat, toolbox, runner, controller=controller, example_set=example_set,
                      disabled_checks=tuple(cfg.answers.disable))
