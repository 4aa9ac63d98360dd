"""HAMMR's parent-side LLM tools and how results read as observations.

``Recall`` stands in for the paper's Wikipedia article (STRATEGIES.md 1.5): it is the LLM's own
memory, and the observation says so. ``AnswerWithContext`` keeps long text out of the agent's
prompt; ``DecomposeQuestion`` splits a two-hop question.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hydra_vr.answer_types import expected_type
from hydra_vr.llm.base import ChatMessage, ChatModel
from hydra_vr.llm.typed import ask_typed, parse_json_reply
from hydra_vr.prompts import render_prompt

SHOWN_TEXT_CHARS = 80  # longer text stays in its variable; the observation names it
_MAX_BOXES = 4
_DECOMPOSE_SCHEMA = {"type": "object", "properties": {"first": {"type": "string"}, "second": {"type": "string"}},
                     "required": ["first", "second"]}


def recall(llm: ChatModel, entity: str) -> str:
    reply = llm.chat([ChatMessage("system", render_prompt("hammr_recall")), ChatMessage("user", entity)], max_tokens=96)
    return " ".join(reply.text.split())


def answer_with_context(llm: ChatModel, question: str, context: str) -> str:
    messages = [ChatMessage("system", render_prompt("hammr_context")),
                ChatMessage("user", render_prompt("hammr_context_user", question=question, context=context))]
    reply = ask_typed(llm, messages, expected_type(question))
    return reply.answer if reply.answer is not None else reply.raw


def decompose_question(llm: ChatModel, question: str) -> list[str]:
    reply = llm.chat([ChatMessage("system", render_prompt("hammr_decompose")), ChatMessage("user", question)], max_tokens=96,
                     json_schema=_DECOMPOSE_SCHEMA)
    data = parse_json_reply(reply.text)
    parts = [str(data.get(k, "")).strip() for k in ("first", "second")]
    return [p for p in parts if p] or [question]


def call_llm_tool(llm: ChatModel, name: str, args: Sequence[str]) -> Any:
    """Run the LLM tool ``name``; a wrong number of arguments is an error for the observation."""
    arity = {"Recall": 1, "AnswerWithContext": 2, "DecomposeQuestion": 1}[name]
    if len(args) != arity:
        raise ValueError(f"{name} takes {arity} argument{'s' if arity > 1 else ''}, got {len(args)}")
    if name == "Recall":
        return recall(llm, args[0])
    if name == "AnswerWithContext":
        return answer_with_context(llm, args[0], args[1])
    return decompose_question(llm, args[0])


def boxes_text(boxes: Sequence[Sequence[float]]) -> str:
    shown = ", ".join("[" + ", ".join(f"{v:.0f}" for v in b) + "]" for b in boxes[:_MAX_BOXES])
    return shown + (f" and {len(boxes) - _MAX_BOXES} more" if len(boxes) > _MAX_BOXES else "")


def describe_variable(var: dict[str, Any]) -> str:
    """One observation line for a variable the sandbox reported (``VariableInfo.to_dict()``)."""
    name, typ, value = var["name"], var["type"], var["repr"]
    if var.get("box") is not None:
        return f"stored a patch in '{name}' at {boxes_text([var['box']])}"
    if var.get("boxes") is not None:
        n = len(var["boxes"])
        return f"stored {n} patch{'es' if n != 1 else ''} in '{name}' at {boxes_text(var['boxes'])}"
    if typ in ("list", "tuple") and value in ("[]", "()"):
        return f"'{name}' is empty (nothing found)"
    if typ == "str" and len(value) > SHOWN_TEXT_CHARS:
        return f"stored a text of about {len(value) - 2} characters in '{name}'"
    return f"{name} = {value}"


def describe_text(name: str, value: Any) -> str:
    """One observation line for a parent-side result (text or a list of texts)."""
    text = repr(value)
    if isinstance(value, str) and len(text) > SHOWN_TEXT_CHARS:
        return f"stored a text of {len(value)} characters in '{name}'"
    return f"{name} = {text}"


__all__ = ["answer_with_context", "boxes_text", "call_llm_tool", "decompose_question", "describe_text", "describe_variable", "recall"]
