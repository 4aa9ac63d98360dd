"""AVIS's transition graph: which actions the planner may choose from which state (a YAML file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from hydra_vr.agent.types import Task

QueryKind = Literal["none", "question", "noun", "text"]
DEFAULT_GRAPH = "avis_graph"  # hydra_vr/prompts/examples/avis_graph.yaml


class GraphError(ValueError):
    """A transition graph file that cannot be used (unreadable, unknown action, no start state...)."""


class ActionSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    doc: str
    query: QueryKind = "none"
    tasks: list[Task] = Field(default_factory=lambda: ["vqa", "grounding"])


class TransitionGraph(BaseModel):
    """States are action names plus ``start``; ``graph[state]`` lists the actions allowed from it."""

    model_config = ConfigDict(extra="forbid")

    start: str = "START"
    actions: dict[str, ActionSpec]
    graph: dict[str, list[str]]

    @model_validator(mode="after")
    def _consistent(self) -> TransitionGraph:
        if self.start not in self.graph:
            raise ValueError(f"the start state {self.start!r} has no edges in `graph`")
        for state, targets in self.graph.items():
            if state != self.start and state not in self.actions:
                raise ValueError(f"graph state {state!r} is neither the start state nor an action")
            unknown = [a for a in targets if a not in self.actions]
            if unknown:
                raise ValueError(f"graph[{state!r}] names unknown actions {unknown}; defined: {', '.join(self.actions)}")
        return self

    # ------------------------------------------------------------------ queries
    def for_task(self, task: Task) -> list[str]:
        """Every action offered for ``task``, in file order."""
        return [name for name, spec in self.actions.items() if task in spec.tasks]

    def allowed(self, state: str, task: Task, use_graph: bool = True) -> list[str]:
        """Actions the graph allows after ``state`` (all of the task's actions without the graph)."""
        names = self.graph.get(state, []) if use_graph else self.for_task(task)
        return [a for a in names if task in self.actions[a].tasks]

    def feasible(self, state: str, task: Task, taken: set[str], use_graph: bool = True) -> list[str]:
        """Allowed actions minus those already taken in this state (AVIS's A_s)."""
        return [a for a in self.allowed(state, task, use_graph) if a not in taken]


def load_graph(path: str | Path | None = None) -> TransitionGraph:
    """The graph in ``path``, or the packaged default written for the offline tools."""
    try:
        if path is None:
            from hydra_vr.prompts import load_examples

            data: Any = load_examples(DEFAULT_GRAPH)
        else:
            data = yaml.safe_load(Path(path).expanduser().read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise GraphError(f"cannot read the AVIS transition graph {path}: {exc}") from None
    if not isinstance(data, dict):
        raise GraphError(f"the AVIS transition graph {path or DEFAULT_GRAPH} is not a YAML mapping")
    try:
        return TransitionGraph.model_validate(data)
    except ValidationError as exc:
        raise GraphError(f"invalid AVIS transition graph {path or DEFAULT_GRAPH}: {exc}") from None


__all__ = ["ActionSpec", "GraphError", "QueryKind", "TransitionGraph", "load_graph"]
