"""A fake chat model for unit tests of loop logic: scripted replies, recorded calls."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from hydra_vr.llm.base import ChatMessage, ChatResult, LLMError

# A reply is text, or a function of the regex match (rules) / of the messages (queue).
Reply = Union[str, Callable[..., str]]


@dataclass
class ScriptedCall:
    messages: list[ChatMessage]
    max_tokens: int
    temperature: float
    stop: list[str] | None
    json_schema: dict[str, Any] | None
    reply: str = ""

    @property
    def last_user(self) -> str:
        return next((m.content for m in reversed(self.messages) if m.role == "user"), "")


@dataclass
class ScriptedChat:
    """Returns queued ``responses`` in order; ``rules`` (regex on the last user message, reply) win first.

    A rule may carry a third item, a regex the system prompt must also match: the loop's roles share
    user-message templates and differ by system prompt, so a config-only script (a server started
    from a YAML file) can still answer the planner and the summarizer differently.
    A rule's reply may be a callable taking the ``re.Match``; ``rule`` may be any callable taking the
    message list and returning text, or None to fall through to the queue. Every call is recorded in
    ``calls``. Running out of replies raises :class:`LLMError` naming the unanswered message.
    """

    responses: list[Reply] = field(default_factory=list)
    rules: list[tuple[str, Reply] | tuple[str, Reply, str]] = field(default_factory=list)
    rule: Callable[[list[ChatMessage]], str | None] | None = None
    name: str = "scripted"
    calls: list[ScriptedCall] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._queue: deque[Reply] = deque(self.responses)
        # Config files give rules as [regex, reply] lists; compile once.
        self._rules = [(re.compile(r[0], re.S), r[1], re.compile(r[2], re.S) if len(r) > 2 and r[2] else None)
                       for r in (tuple(rule) for rule in self.rules)]

    def push(self, *replies: Reply) -> None:
        """Queue more replies."""
        self._queue.extend(replies)

    @property
    def remaining(self) -> int:
        return len(self._queue)

    def cache_identity(self) -> dict[str, Any]:
        return {"backend": "scripted", "name": self.name, "id": id(self)}

    def _reply(self, messages: list[ChatMessage], last_user: str) -> str:
        system = next((m.content for m in messages if m.role == "system"), "")
        for pattern, reply, system_pattern in self._rules:
            match = pattern.search(last_user)
            if match and (system_pattern is None or system_pattern.search(system)):
                return reply(match) if callable(reply) else reply
        if self.rule is not None:
            text = self.rule(messages)
            if text is not None:
                return text
        if not self._queue:
            raise LLMError(
                f"scripted chat model {self.name!r} ran out of replies after {len(self.calls) - 1} call(s); "
                f"unanswered user message: {last_user[:200]!r}"
            )
        reply = self._queue.popleft()
        return reply(messages) if callable(reply) else reply

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        stop: Sequence[str] | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        msgs = list(messages)
        call = ScriptedCall(msgs, max_tokens, temperature, list(stop) if stop else None, json_schema)
        self.calls.append(call)
        text = self._reply(msgs, call.last_user)
        if not isinstance(text, str):
            raise LLMError(f"scripted reply must be a string, got {type(text).__name__}")
        for s in stop or ():
            if s and s in text:
                text = text[: text.index(s)]
        call.reply = text
        return ChatResult(
            text=text,
            model=self.name,
            prompt_tokens=sum(len(m.content.split()) for m in msgs),
            completion_tokens=len(text.split()),
        )


def scripted_from_options(
    responses: Iterable[Reply] = (),
    rules: Iterable[Sequence[Any]] = (),
    name: str = "scripted",
) -> ScriptedChat:
    """Factory used by the registry (``backend: scripted``, options ``responses`` / ``rules``; a rule is
    ``[user_regex, reply]`` or ``[user_regex, reply, system_regex]``)."""
    return ScriptedChat(responses=list(responses), rules=[(str(r[0]), r[1], *([str(r[2])] if len(r) > 2 else [])) for r in rules],
                        name=name)
