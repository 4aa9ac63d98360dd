"""The chat and embedding protocols every LLM backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np


class LLMError(RuntimeError):
    """An LLM backend failed in a way the caller should report (unreachable endpoint, bad model file...)."""


@dataclass(frozen=True)
class ChatMessage:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass
class ChatResult:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cached: bool = False  # served from the disk cache without calling the model
    meta: dict[str, Any] = field(default_factory=dict)


def excluded_words(schema: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``schema`` without its ``{"not": {"enum": [...]}}`` clauses, and the strings those exclude.

    JSON-schema-to-grammar converters (llama.cpp's) cannot express "any string but these" and ignore
    ``not``; servers may reject it. A backend sends the stripped schema and keeps the reply off those
    words as it can (llama.cpp: a logit bias against the tokens that start them), or not at all.
    """
    words: list[str] = []

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            excluded = node.get("not")
            if isinstance(excluded, dict) and isinstance(excluded.get("enum"), list):
                words.extend(str(w) for w in excluded["enum"])
            return {k: strip(v) for k, v in node.items() if k != "not"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    stripped = strip(schema)
    return stripped, tuple(dict.fromkeys(words))


@runtime_checkable
class ChatModel(Protocol):
    """A chat model. ``json_schema`` asks for output constrained to that JSON schema where supported
    (its ``not: {enum: [...]}`` clauses, where a backend can, by keeping the reply off those words)."""

    name: str

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        stop: Sequence[str] | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> ChatResult: ...


@runtime_checkable
class Embedder(Protocol):
    """Text embeddings, one L2-normalised row per text."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...
