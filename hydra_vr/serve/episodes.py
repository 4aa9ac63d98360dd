"""One worker's episodes: its own agent (models, sandbox child), a loop variant per mode, step events.

The agent calls its observer once per finished loop step; those become ``step`` events while the
episode runs. Steps the loop records without an observer call (ViperGPT's single program, a
planner answering from memory) are published when the episode returns, so a stream always gets
one ``step`` event per trace step, in order, before the ``result``.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

from hydra_vr.serve.jobs import Job

log = logging.getLogger(__name__)

AgentFactory = Callable[[], Any]


def step_event(index: int, step: Any) -> dict[str, Any]:
    """A trace step as event data; dataclasses become dicts, anything else is passed as it is."""
    data = dataclasses.asdict(step) if dataclasses.is_dataclass(step) else dict(step)
    return {"index": index, "step": data}


def agent_with(agent: Any, strategy: str, mode: str | None) -> Any:
    """An agent that shares ``agent``'s models, sandbox and controller but runs ``strategy`` (and HYDRA ``mode``).

    A separate object rather than a mutated config: the agent caches its roles per task, and
    their number of options depends on the mode.
    """
    from hydra_vr.agent.loop import HydraAgent

    update: dict[str, Any] = {"strategy": strategy}
    if mode is not None:
        update["mode"] = mode
    elif agent.config.mode == "vipergpt":  # the old spelling would override the strategy asked for
        update["mode"] = "no_rl"
    return HydraAgent(agent.config.model_copy(update=update), agent.llm, agent.toolbox, agent.runner,
                      controller=agent.controller, example_set=agent.example_set)


class EpisodeWorker:
    """Runs jobs one at a time on its own agent (built once, when the worker starts)."""

    def __init__(self, agent_factory: AgentFactory) -> None:
        self.base = agent_factory()
        self._variants: dict[tuple[str, str | None], Any] = {}

    def agent_for(self, strategy: str = "hydra", mode: str | None = None) -> Any:
        base_config = getattr(self.base, "config", None)
        if base_config is None or (strategy == base_config.strategy_name and mode in (None, base_config.mode)):
            return self.base
        if (strategy, mode) not in self._variants:
            self._variants[(strategy, mode)] = agent_with(self.base, strategy, mode)
        return self._variants[(strategy, mode)]

    def __call__(self, job: Job) -> dict[str, Any]:
        request = job.request
        agent = self.agent_for(request.strategy, request.mode)
        published = 0

        def observe(state: Any, options: Any, choice: int, trace: Any) -> None:
            nonlocal published
            job.publish("step", step_event(published, trace))
            published += 1

        agent.observer = observe
        t0 = time.perf_counter()
        try:
            result = agent.run(str(request.image_path), request.query, task=request.task)
        finally:
            job.episode_seconds = time.perf_counter() - t0
            agent.observer = None
        for index, step in enumerate(result.steps[published:], start=published):
            job.publish("step", step_event(index, step))
        data = result.to_dict()
        data["image"] = request.image_label  # the server's file path is nobody's business
        data["strategy"] = request.strategy
        return data

    def close(self) -> None:
        close = getattr(getattr(self.base, "runner", None), "close", None)
        if close is not None:
            close()
