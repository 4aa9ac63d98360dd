"""AVIS's two LLM roles: the planner picks ``{action, query}`` among the feasible actions, the reasoner
labels each tool output ``informative``, ``uninformative`` or ``answer``. Both reply in JSON constrained
by a schema (an enum of what is allowed), are validated here, and are re-asked (bounded) when invalid."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from hydra_vr.agent.strategies.avis.graph import TransitionGraph
from hydra_vr.agent.strategies.avis.pool import Decision, ReasonerExample
from hydra_vr.agent.types import Task
from hydra_vr.answer_types import AnswerSpec
from hydra_vr.llm.base import ChatMessage, ChatModel
from hydra_vr.llm.typed import answer_schema, parse_json_reply
from hydra_vr.prompts import render_prompt

LABELS = ("informative", "uninformative", "answer")


class PlannerReply(BaseModel):
    action: str
    query: str = ""


@dataclass
class PlanChoice:
    action: str
    query: str
    tries: int = 0
    errors: list[str] = field(default_factory=list)  # why each refused reply was refused
    fallback: bool = False  # no valid reply within the retries: the first feasible action was taken


def actions_text(graph: TransitionGraph, feasible: list[str], docs: bool) -> str:
    lines = []
    for name in feasible:
        spec = graph.actions[name]
        line = f"- {name}" + (f": {spec.doc}" if docs else "")
        lines.append(line + (f" (query: a {spec.query})" if spec.query != "none" else ""))
    return "\n".join(lines)


class AvisPlanner:
    """Sees only the feasible actions and examples retrieved for them; returns a validated choice."""

    def __init__(self, llm: ChatModel, graph: TransitionGraph, retries: int) -> None:
        self.llm = llm
        self.graph = graph
        self.retries = retries
        self.system = render_prompt("avis_planner_system")  # stable: the KV cache keeps this prefix

    def _user(self, question: str, spec: AnswerSpec | None, state: str, memory: str, nouns: list[str], feasible: list[str],
              docs: bool) -> str:
        return render_prompt("avis_planner_user", question=question, expected=spec.describe() if spec else "", state=state,
                             memory=memory, nouns=", ".join(nouns), actions=actions_text(self.graph, feasible, docs), error="")

    def messages(self, question: str, spec: AnswerSpec | None, state: str, memory: str, nouns: list[str], feasible: list[str],
                 examples: list[Decision]) -> list[ChatMessage]:
        msgs = [ChatMessage("system", self.system)]
        for ex in examples:  # earlier turns: small models imitate turns better than quoted examples
            msgs.append(ChatMessage("user", self._user(ex.question, None, ex.state, "\n".join(ex.facts), [], list(ex.feasible), False)))
            msgs.append(ChatMessage("assistant", json.dumps({"action": ex.action, "query": ex.query})))
        msgs.append(ChatMessage("user", self._user(question, spec, state, memory, nouns, feasible, True)))
        return msgs

    def validate(self, text: str, feasible: list[str], check: Callable[[str, str], str | None]) -> tuple[PlannerReply | None, str]:
        """The reply if valid, else (None, why)."""
        data = parse_json_reply(text)
        if not data:
            return None, 'the reply is not a JSON object {"action": ..., "query": ...}'
        try:
            reply = PlannerReply.model_validate({k: v for k, v in data.items() if k in ("action", "query")})
        except ValidationError as exc:
            return None, f"bad fields: {exc.errors()[0]['msg']}"
        reply.action, reply.query = reply.action.strip(), " ".join(str(reply.query).split())
        if reply.action not in feasible:
            return None, f"{reply.action!r} is not a feasible action; choose one of: {', '.join(feasible)}"
        kind = self.graph.actions[reply.action].query
        if kind != "none" and not reply.query:
            return None, f"{reply.action} needs a query ({kind})"
        if kind == "none":
            reply.query = ""
        problem = check(reply.action, reply.query)
        return (None, problem) if problem else (reply, "")

    def choose(self, messages: list[ChatMessage], feasible: list[str], check: Callable[[str, str], str | None],
               default: Callable[[str], str]) -> PlanChoice:
        """Ask, validate, re-ask with the reason (``retries`` times); then the first feasible action."""
        schema = {"type": "object", "required": ["action", "query"],
                  "properties": {"action": {"type": "string", "enum": list(feasible)}, "query": {"type": "string"}}}
        msgs, errors = list(messages), []
        for attempt in range(self.retries + 1):
            res = self.llm.chat(msgs, max_tokens=48, temperature=0.0, json_schema=schema)
            reply, why = self.validate(res.text, feasible, check)
            if reply is not None:
                return PlanChoice(reply.action, reply.query, attempt + 1, errors)
            errors.append(why)
            msgs += [ChatMessage("assistant", res.text.strip() or "{}"),
                     ChatMessage("user", f"Not valid: {why}. Reply again with JSON {{\"action\": one of {feasible}, \"query\": ...}}.")]
        for action in feasible:  # deterministic last resort, so a bad planner cannot stall the search
            query = default(action)
            if check(action, query) is None:
                return PlanChoice(action, query, self.retries + 1, errors, fallback=True)
        return PlanChoice(feasible[0], default(feasible[0]), self.retries + 1, errors, fallback=True)


@dataclass
class Judgement:
    label: str
    fact: str
    answer: str
    tries: int
    by_rule: bool = False  # labelled without the LLM (an empty or failed output)


class AvisReasoner:
    """Labels one tool output; negative examples for long-list outputs come first in its prompt."""

    def __init__(self, llm: ChatModel, examples: list[ReasonerExample], retries: int = 1) -> None:
        self.llm = llm
        self.retries = retries
        prefix = [ChatMessage("system", render_prompt("avis_reasoner_system"))]
        for ex in examples:
            prefix.append(ChatMessage("user", render_prompt("avis_reasoner_user", question=ex.question, expected="", memory="",
                                                            action=ex.action, query=ex.query, output=ex.output)))
            prefix.append(ChatMessage("assistant", json.dumps(ex.reply)))
        self.prefix = prefix

    @staticmethod
    def schema(task: Task, spec: AnswerSpec | None) -> dict[str, Any]:
        labels = list(LABELS) if task == "vqa" else ["informative", "uninformative"]
        extra = {"label": {"type": "string", "enum": labels}, "fact": {"type": "string"}}
        if spec is None:
            return {"type": "object", "properties": extra, "required": list(extra)}
        return answer_schema(spec, extra)

    def judge(self, question: str, task: Task, spec: AnswerSpec | None, memory: str, action: str, query: str,
              output: str) -> Judgement:
        user = render_prompt("avis_reasoner_user", question=question, expected=spec.describe() if spec else "", memory=memory,
                             action=action, query=query, output=output[:1200])
        msgs = [*self.prefix, ChatMessage("user", user)]
        schema = self.schema(task, spec)
        allowed = schema["properties"]["label"]["enum"]
        for attempt in range(self.retries + 1):
            res = self.llm.chat(msgs, max_tokens=96, temperature=0.0, json_schema=schema)
            data = parse_json_reply(res.text)
            label = str(data.get("label", "")).strip().lower()
            if label in allowed:
                answer = data.get("answer")
                return Judgement(label, " ".join(str(data.get("fact") or "").split()), "" if answer is None else str(answer),
                                 attempt + 1)
            msgs += [ChatMessage("assistant", res.text.strip() or "{}"),
                     ChatMessage("user", f"Not valid: the label must be one of {allowed}. Reply again with JSON.")]
        # No valid label: keep the output (informative) rather than lose what the tool found.
        return Judgement("informative", output.splitlines()[0][:200] if output else "", "", self.retries + 1)


__all__ = ["AvisPlanner", "AvisReasoner", "Judgement", "LABELS", "PlanChoice", "PlannerReply", "actions_text"]
