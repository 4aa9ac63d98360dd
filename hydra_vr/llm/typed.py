"""Ask an LLM for an answer of a given type: constrained where the backend can, re-asked otherwise.

Every answering role goes through :func:`ask_typed`: the reply is JSON ``{"answer": ...}``; closed
types (yes/no, named options, colours, numbers) are constrained by a JSON schema (a llama.cpp grammar,
or ``response_format`` on OpenAI-compatible endpoints); what still does not fit (an open question
answered "no", a failure message) is re-asked once with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hydra_vr.answer_types import AnswerSpec, clean, is_failure_answer
from hydra_vr.llm.base import ChatMessage, ChatModel

_OPEN_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def answer_schema(spec: AnswerSpec, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{"answer": <typed>}`` plus ``extra`` properties (for example the summarizer's decision)."""
    schema = spec.json_schema() or _OPEN_SCHEMA
    if not extra:
        return schema
    return {"type": "object", "properties": {**extra, **schema["properties"]}, "required": [*extra, "answer"]}


def parse_json_reply(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (small models add prose around it); {} when there is none."""
    start = text.find("{")
    if start < 0:
        return {}
    try:
        data = json.JSONDecoder().raw_decode(text[start:])[0]
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def reply_answer(text: str) -> str:
    """The ``answer`` of a JSON reply, or the text itself when the model ignored the format."""
    data = parse_json_reply(text)
    value = data.get("answer") if data else None
    return clean(text) if value is None else clean(str(value))


@dataclass
class TypedReply:
    answer: str | None  # coerced to the type, or None when no try fitted
    raw: str  # the last reply's answer as given
    reasons: list[str] = field(default_factory=list)  # why each refused try did not fit
    tries: int = 0


def ask_typed(
    llm: ChatModel,
    messages: Sequence[ChatMessage],
    spec: AnswerSpec,
    *,
    max_tokens: int = 24,
    retries: int = 1,
) -> TypedReply:
    """Ask for ``{"answer": ...}`` of type ``spec``; re-ask up to ``retries`` times with the reason."""
    msgs = list(messages)
    schema = answer_schema(spec)
    reply = TypedReply(None, "")
    for _ in range(retries + 1):
        res = llm.chat(msgs, max_tokens=max_tokens, json_schema=schema)
        reply.tries += 1
        reply.raw = reply_answer(res.text)
        value = spec.coerce(reply.raw)
        if value is not None:
            reply.answer = value
            return reply
        reason = spec.check(reply.raw) or "the answer does not fit the question"
        reply.reasons.append(reason)
        # "unknown" said twice became no answer at all (6 of 124 labelled questions under vipergpt)
        guess = " Where the findings do not say, give your best guess." if is_failure_answer(reply.raw) else ""
        msgs += [ChatMessage("assistant", res.text.strip() or "{}"),
                 ChatMessage("user", f"That answer does not fit: {reason.rstrip('.')}.{guess} Reply again with JSON {{\"answer\": ...}}.")]
    return reply


__all__ = ["TypedReply", "answer_schema", "ask_typed", "parse_json_reply", "reply_answer"]
