"""AVIS's example pool: hand-written trajectories, replayed through the graph, retrieved per decision."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hydra_vr.agent.strategies.avis.graph import GraphError, TransitionGraph
from hydra_vr.agent.types import Task

Label = Literal["informative", "uninformative", "answer"]
DEFAULT_POOL = "avis_pool"  # hydra_vr/prompts/examples/avis_pool.yaml


class PoolStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: str
    query: str = ""
    label: Label
    fact: str
    answer: str = ""


class Trajectory(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str
    task: Task = "vqa"
    steps: list[PoolStep]


class ReasonerExample(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str
    action: str
    query: str = ""
    output: str
    reply: dict[str, str]


class PoolFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    trajectories: list[Trajectory]
    reasoner: list[ReasonerExample] = Field(default_factory=list)


@dataclass(frozen=True)
class Decision:
    """One planner decision of a trajectory, with the state and feasible actions the graph gave it."""

    question: str
    task: Task
    state: str
    feasible: tuple[str, ...]
    facts: tuple[str, ...]  # what the working memory held before the decision
    action: str
    query: str


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower())) - {"the", "a", "an", "is", "are", "this", "what", "of", "in", "on"}


class ExamplePool:
    """Decisions indexed by the action taken; ``retrieve`` picks those about the feasible actions."""

    def __init__(self, decisions: list[Decision], reasoner: list[ReasonerExample]) -> None:
        self.decisions = decisions
        self.reasoner = reasoner

    @classmethod
    def load(cls, graph: TransitionGraph, path: str | Path | None = None) -> ExamplePool:
        try:
            if path is None:
                from hydra_vr.prompts import load_examples

                data: Any = load_examples(DEFAULT_POOL)
            else:
                data = yaml.safe_load(Path(path).expanduser().read_text())
            pool = PoolFile.model_validate(data)
        except (OSError, yaml.YAMLError, ValidationError) as exc:
            raise GraphError(f"invalid AVIS example pool {path or DEFAULT_POOL}: {exc}") from None
        decisions = [d for t in pool.trajectories for d in replay(t, graph)]
        return cls(decisions, pool.reasoner)

    def retrieve(self, question: str, task: Task, state: str, feasible: list[str], k: int) -> list[Decision]:
        """Up to ``k`` decisions whose action is feasible now: one per action first, same state and
        similar questions preferred (AVIS's dynamic prompt: examples about the actions in A_s)."""
        if k <= 0:
            return []
        q = _words(question)
        candidates = [d for d in self.decisions if d.action in feasible and d.task == task]

        def score(d: Decision) -> float:
            overlap = len(q & _words(d.question)) / max(1, len(q | _words(d.question)))
            return 2.0 * (d.state == state) + overlap

        ranked = sorted(candidates, key=score, reverse=True)
        chosen: list[Decision] = []
        for d in ranked:  # distinct actions first: the planner sees what each feasible action is for
            if len(chosen) < k and d.action not in {c.action for c in chosen}:
                chosen.append(d)
        chosen += [d for d in ranked if d not in chosen][: k - len(chosen)]
        return chosen


def replay(trajectory: Trajectory, graph: TransitionGraph) -> list[Decision]:
    """The trajectory's decisions with the graph's states; a step the graph forbids ends the replay
    (a user's own graph may not have every action the packaged pool uses)."""
    state, taken, facts, out = graph.start, set(), [], []  # type: ignore[var-annotated]
    for step in trajectory.steps:
        feasible = graph.feasible(state, trajectory.task, taken)
        if step.action not in feasible:
            break
        out.append(Decision(trajectory.question, trajectory.task, state, tuple(feasible), tuple(facts), step.action, step.query))
        facts.append(f"{step.action}: {step.fact}" + (" (uninformative)" if step.label == "uninformative" else ""))
        taken.add(step.action)
        if step.label == "answer":
            break
        if step.label == "informative":  # a new node of the search tree: nothing taken there yet
            state, taken = step.action, set()
    return out


__all__ = ["Decision", "ExamplePool", "Label", "PoolStep", "ReasonerExample", "Trajectory", "replay"]
