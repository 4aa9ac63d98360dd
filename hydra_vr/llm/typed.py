"""Ask an LLM for an answer of a given type: constrained where the backend can, re-asked otherwise.

Every answering role goes through :func:`ask_typed`: the reply is JSON ``{"answer": ...}``; closed
types (yes/no, named options, colours, numbers) are constrained by a JSON schema (a llama.cpp grammar,
or ``response_format`` on OpenAI-compatible endpoints); a reply that still does not fit (an open
question answered "no", a long text for a short answer, "unknown") is re-asked with the reason for
ranked guesses kept off the words already refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
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


def parse_json_reply(text: str, *, repair: bool = True) -> dict[str, Any]:
    """The first JSON object in ``text`` (small models add prose around it); {} when there is none.

    A reply cut at ``max_tokens`` (a long reading copied into the answer) is an object without its end:
    with ``repair`` its fields are read as far as they go (json-repair), so the text that was cut is
    not taken for the answer, JSON and all."""
    start = text.find("{")
    if start < 0:
        return {}
    try:
        data = json.JSONDecoder().raw_decode(text[start:])[0]
    except ValueError:
        if not repair:
            return {}
        import json_repair

        try:
            data = json_repair.loads(text[start:])
        except Exception:  # the library's own failures: nothing readable
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


def guesses_schema(spec: AnswerSpec, n: int = 3, refused: Sequence[str] = ()) -> dict[str, Any]:
    """``{"guesses": [n answers of type spec]}``: asked for after replies that did not fit (``refused``),
    each item held to ``spec.guess_schema(refused)``."""
    item = spec.guess_schema(refused)
    return {"type": "object", "properties": {"guesses": {"type": "array", "items": item, "minItems": n, "maxItems": n}},
            "required": ["guesses"]}


def _candidates(text: str) -> list[str]:
    """The answers a reply offers: its ``guesses`` in order, else its ``answer``, else the text."""
    data = parse_json_reply(text, repair=False)
    guesses = data.get("guesses") if data else None
    if isinstance(guesses, list) and guesses:
        return [clean(str(g)) for g in guesses]
    if not data and '"guesses"' in text:  # cut at max_tokens: the guesses it finished, not the cut one
        done = re.findall(r'"((?:[^"\\]|\\.)*)"', text.split("[", 1)[-1])
        return [clean(g) for g in done] or [""]
    return [reply_answer(text)]


_GUESS_ASK = ("That answer does not fit: {reason}. Where the findings do not say, answer from what they do say "
              "and common knowledge: list your {n} best guesses of the right kind, the likeliest first, as JSON "
              "{{\"guesses\": [...]}}.")


def ask_typed(
    llm: ChatModel,
    messages: Sequence[ChatMessage],
    spec: AnswerSpec,
    *,
    max_tokens: int = 24,
    retries: int = 1,
    guesses: int = 3,
    refuse: Callable[[str], str | None] | None = None,
) -> TypedReply:
    """Ask for ``{"answer": ...}`` of type ``spec``; re-ask up to ``retries`` times with the reason.

    A reply that reports a failure ("unknown"), or a free-text reply that does not fit (an open question
    answered "no", a city question answered with no city: 6k names make no grammar, only a check), is
    re-asked for ``guesses`` ranked guesses whose items exclude ``spec.shunned`` of what was refused, and
    the first that fits is taken. Asked again for one answer, or for a list without the exclusion, a
    small model said the refused answer again ("unknown": 6 of 124 labelled questions under vipergpt ended
    with no answer; the question's own subject twice); with it (a logit bias in llama.cpp) it names
    something else.
    ``refuse``: a check that knows the context (the caller's findings), the reason a fitting answer is
    still refused, else None; such an answer is re-asked like one that does not fit.
    """
    msgs = list(messages)
    schema, tokens = answer_schema(spec), max_tokens
    reply = TypedReply(None, "")
    refused_all: list[str] = []
    for _ in range(retries + 1):
        res = llm.chat(msgs, max_tokens=tokens, json_schema=schema)
        reply.tries += 1
        offered = _candidates(res.text)
        reply.raw = offered[0]
        refused = None
        for candidate in offered:
            value = spec.coerce(candidate)
            if value is not None and refuse is not None and (refused := refuse(value)):
                continue
            if value is not None:
                reply.answer = value
                return reply
        reason = (refused or spec.check(reply.raw) or "the answer does not fit the question").rstrip(".")
        reply.reasons.append(reason)
        msgs.append(ChatMessage("assistant", res.text.strip() or "{}"))
        refused_all += offered
        # a failure, or a free text only checked: ranked guesses, kept off what was refused, give more to check
        if guesses > 1 and (all(is_failure_answer(c) for c in offered) or spec.json_schema() is None):
            schema, tokens = guesses_schema(spec, guesses, refused_all), max_tokens * guesses
            msgs.append(ChatMessage("user", _GUESS_ASK.format(reason=reason, n=guesses)))
        else:
            schema, tokens = answer_schema(spec), max_tokens
            msgs.append(ChatMessage("user", f"That answer does not fit: {reason}. Reply again with JSON {{\"answer\": ...}}."))
    return reply


__all__ = ["TypedReply", "answer_schema", "ask_typed", "guesses_schema", "parse_json_reply", "reply_answer"]
