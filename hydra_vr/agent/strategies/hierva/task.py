"""A HierVA task: what the manager hands one worker, validated before any worker runs.

The paper's task tuple ``(k, i, u, m, T, S, y)``: worker id, image index, instruction, known
facts, tools, skills and the expected output (TEXT or IMAGE; BOX added for grounding [ours]).
An invalid task gets a precise error and the manager is asked again (bounded by the strategy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hydra_vr.llm.typed import parse_json_reply

Tool = Literal["zoom", "code"]
Output = Literal["text", "image", "box"]
TOOLS: tuple[str, ...] = ("zoom", "code")
MAX_INSTRUCTION_CHARS = 300


class WorkerTask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    worker_id: int
    image_index: int = Field(ge=0)
    instruction: str
    known_facts: list[str] = Field(default_factory=list)
    tools: list[Tool] = Field(default_factory=list)
    skills: list[str] = Field(default_factory=list)
    expected_output: Output


class TaskError(ValueError):
    """Why a task was refused, written for the manager (every problem, one per line)."""


@dataclass(frozen=True)
class TaskRules:
    """What a task may name at this point of the episode."""

    worker_id: int
    images: Sequence[int]  # 0 and the indices of crops made so far
    skills: Sequence[str]  # the allowlist ([] with the no_skills ablation)
    outputs: Sequence[str]  # text, image (+ box when grounding)
    earlier: Sequence[str] = ()  # instructions already given to workers


def parse_task(text: str, rules: TaskRules) -> WorkerTask:
    """The task in the manager's reply, or :class:`TaskError` saying exactly what is wrong."""
    data = parse_json_reply(text)
    if not data:
        raise TaskError("the reply is not a JSON object; reply with the task as one JSON object")
    try:
        task = WorkerTask.model_validate(data)
    except ValidationError as exc:
        raise TaskError("\n".join(_pydantic_problem(e) for e in exc.errors())) from None
    problems = check_task(task, rules)
    if problems:
        raise TaskError("\n".join(problems))
    return task


def check_task(task: WorkerTask, rules: TaskRules) -> list[str]:
    """Every rule the task breaks (empty when it is valid)."""
    problems = []
    if task.worker_id != rules.worker_id:
        problems.append(f"worker_id is {task.worker_id}, but the next worker is {rules.worker_id}")
    if task.image_index not in rules.images:
        problems.append(f"image_index {task.image_index} does not exist; the images are {', '.join(map(str, rules.images))}")
    instruction = task.instruction.strip()
    if not instruction:
        problems.append("instruction is empty; write one atomic sub-task")
    elif len(instruction) > MAX_INSTRUCTION_CHARS:
        problems.append(f"instruction is {len(instruction)} characters; keep it under {MAX_INSTRUCTION_CHARS} (one atomic sub-task)")
    elif _key(instruction) in {_key(e) for e in rules.earlier}:
        problems.append(f"instruction {instruction!r} was already given to a worker; write the next sub-task")
    unknown = [s for s in task.skills if s not in rules.skills]
    if unknown:
        allowed = ", ".join(rules.skills) or "none (skills are off)"
        problems.append(f"unknown skill(s) {', '.join(map(repr, unknown))}; allowed: {allowed}")
    if task.expected_output not in rules.outputs:
        problems.append(f"expected_output {task.expected_output!r} is not allowed here; use one of {', '.join(rules.outputs)}")
    if task.expected_output == "image" and "zoom" not in task.tools:
        problems.append('expected_output "image" needs the tool "zoom" (a crop is made by zooming)')
    return problems


def task_schema(rules: TaskRules) -> dict[str, Any]:
    """A JSON schema for the task: the grammar keeps a small model to valid ids, names and types."""
    return {
        "type": "object",
        "properties": {
            "worker_id": {"type": "integer", "enum": [rules.worker_id]},
            "image_index": {"type": "integer", "enum": list(rules.images)},
            "instruction": {"type": "string"},
            "known_facts": {"type": "array", "items": {"type": "string"}, "maxItems": 4},
            "tools": {"type": "array", "items": {"type": "string", "enum": list(TOOLS)}, "maxItems": 2},
            "skills": ({"type": "array", "items": {"type": "string", "enum": list(rules.skills)}, "maxItems": 2}
                       if rules.skills else {"type": "array", "maxItems": 0}),
            "expected_output": {"type": "string", "enum": list(rules.outputs)},
        },
        "required": ["worker_id", "image_index", "instruction", "known_facts", "tools", "skills", "expected_output"],
    }


def _pydantic_problem(error: Any) -> str:
    where = ".".join(str(p) for p in error.get("loc", ())) or "task"
    return f"{where}: {error.get('msg', 'invalid')}"


def _key(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".")


__all__ = ["MAX_INSTRUCTION_CHARS", "TOOLS", "TaskError", "TaskRules", "WorkerTask", "check_task", "parse_task", "task_schema"]
