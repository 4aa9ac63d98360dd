"""The HierVA manager: its context C_M and its decisions (plan, next task?, task, final answer).

C_M is the question, the list of images (the original and the crops workers made), the final
plan and one distilled line per finished worker. The draft decomposition of the first planning
stage is seen only by the second stage, then dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hydra_vr.agent.strategies.hierva.task import TaskError, TaskRules, WorkerTask, parse_task, task_schema
from hydra_vr.agent.strategies.hierva.worker import ImageRef
from hydra_vr.answer_types import AnswerSpec
from hydra_vr.llm.base import ChatMessage, ChatModel
from hydra_vr.llm.typed import TypedReply, ask_typed, parse_json_reply
from hydra_vr.prompts import load_examples, render_prompt

DRAFT_ASK = ("Stage 1, draft: decompose the {subject} into atomic sub-tasks, each on one image (the whole image, or a region "
             "zoomed in by an earlier sub-task). Only plan; do not answer.")
PLAN_ASK = ("Stage 2: turn your draft into the final plan: an explicit list of at most {n} short steps, one sub-task each. "
            'Reply with JSON {{"steps": [...]}}.')
NEXT_ASK = 'Is there a next task? Reply with JSON {"next": "yes"} if a plan step is not done yet, else {"next": "no"}.'
TASK_ASK = "Write the task for worker {k} as JSON."
FINAL_ASK = "Give the final answer to the question from what the workers found. The question is {expected}"
VQA_GOAL = "Your goal: answer the question with a word or a short phrase."
GROUNDING_GOAL = 'Your goal: find the one object the expression describes; its worker must have expected_output "box".'


def plan_schema(n: int) -> dict[str, Any]:
    return {"type": "object", "properties": {"steps": {"type": "array", "minItems": 1, "maxItems": n, "items": {"type": "string"}}},
            "required": ["steps"]}


NEXT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"next": {"type": "string", "enum": ["yes", "no"]}}, "required": ["next"]}


@dataclass
class TaskReply:
    task: WorkerTask | None
    errors: list[str] = field(default_factory=list)  # why each refused reply was refused
    replies: list[str] = field(default_factory=list)


class Manager:
    def __init__(self, llm: ChatModel, query: str, image: ImageRef, *, grounding: bool, skills: list[str], max_tasks: int,
                 max_task_retries: int) -> None:
        self.llm, self.query, self.grounding = llm, query, grounding
        self.skills, self.max_tasks, self.max_task_retries = skills, max_tasks, max_task_retries
        self.images: dict[int, ImageRef] = {0: image}
        self.plan: list[str] = []
        self.done: list[str] = []  # one line per finished worker (its full trace with no_distill)
        self.instructions: list[str] = []
        system = render_prompt("hierva_manager_system", skills=", ".join(skills) if skills else "none available",
                               grounding=grounding, goal=GROUNDING_GOAL if grounding else VQA_GOAL)
        self.prefix = [ChatMessage("system", system)]
        for ex in load_examples("hierva").get("manager", []):
            user = render_prompt("hierva_manager_user", subject="Question", query=ex["query"], images=ex["images"], plan=ex["plan"],
                                 done=ex["done"], ask=ex["ask"])
            reply = dict(ex["reply"], skills=[s for s in ex["reply"]["skills"] if s in skills])
            self.prefix += [ChatMessage("user", user), ChatMessage("assistant", json.dumps(reply))]

    # ------------------------------------------------------------------ context
    @property
    def subject(self) -> str:
        return "Expression" if self.grounding else "Question"

    def context(self, ask: str) -> list[ChatMessage]:
        """C_M with one request at the end."""
        user = render_prompt("hierva_manager_user", subject=self.subject, query=self.query,
                             images=[self.images[i].line for i in sorted(self.images)], plan=self.plan, done=self.done, ask=ask)
        return [*self.prefix, ChatMessage("user", user)]

    # ---------------------------------------------------------------- decisions
    def make_plan(self) -> str:
        """Stage 1 drafts a decomposition, stage 2 turns it into the step list kept in C_M; returns the draft."""
        messages = self.context(DRAFT_ASK.format(subject=self.subject.lower()))
        draft = self.llm.chat(messages, max_tokens=160).text.strip()
        messages += [ChatMessage("assistant", draft or "(no draft)"), ChatMessage("user", PLAN_ASK.format(n=self.max_tasks))]
        reply = parse_json_reply(self.llm.chat(messages, max_tokens=200, json_schema=plan_schema(self.max_tasks)).text)
        steps = reply.get("steps") if isinstance(reply.get("steps"), list) else []
        self.plan = [str(s).strip() for s in steps if str(s).strip()][: self.max_tasks]
        if not self.plan:  # an unusable plan: one step, the whole question on the whole image
            self.plan = [f"Answer on the whole image: {self.query}"]
        return draft

    def wants_next(self) -> bool:
        data = parse_json_reply(self.llm.chat(self.context(NEXT_ASK), max_tokens=12, json_schema=NEXT_SCHEMA).text)
        answer = str(data.get("next", "")).lower()
        if answer in ("yes", "no"):
            return answer == "yes"
        return len(self.done) < len(self.plan)  # unparseable: follow the plan

    def rules(self) -> TaskRules:
        return TaskRules(worker_id=len(self.done) + 1, images=sorted(self.images), skills=self.skills,
                         outputs=("text", "image", "box") if self.grounding else ("text", "image"), earlier=self.instructions)

    def write_task(self) -> TaskReply:
        """The next task, validated; an invalid one is re-asked with the precise error (bounded)."""
        rules = self.rules()
        messages = self.context(TASK_ASK.format(k=rules.worker_id))
        out = TaskReply(None)
        for _ in range(self.max_task_retries + 1):
            text = self.llm.chat(messages, max_tokens=220, json_schema=task_schema(rules)).text
            out.replies.append(text)
            try:
                out.task = parse_task(text, rules)
                self.instructions.append(out.task.instruction)
                return out
            except TaskError as exc:
                out.errors.append(str(exc))
                messages = [*messages, ChatMessage("assistant", text.strip() or "{}"),
                            ChatMessage("user", f"That task is invalid:\n{exc}\nWrite the task for worker {rules.worker_id} again as JSON.")]
        return out

    def final_answer(self, spec: AnswerSpec) -> TypedReply:
        return ask_typed(self.llm, self.context(FINAL_ASK.format(expected=spec.describe())), spec, max_tokens=24, retries=1)


__all__ = ["Manager", "TaskReply", "plan_schema"]
