"""A scripted LLM for role-based loops: one reply queue per role, the role told by its system prompt."""

from __future__ import annotations

from collections import deque
from typing import Any

from hydra_vr.llm.scripted import ScriptedCall, ScriptedChat


class RoleQueues:
    """Replies per role, routed by a marker in the system prompt; an unscripted call fails the test.

    ``seen[role]`` holds the last user message of each call, ``messages(role)`` whole conversations,
    ``calls(role)`` the recorded calls (with their JSON schema).
    """

    def __init__(self, markers: dict[str, str], **queues: list[str]) -> None:
        self.markers = markers
        self.queues = {role: deque(queues.get(role, [])) for role in markers}
        self.seen: dict[str, list[str]] = {role: [] for role in markers}
        self.chat = ScriptedChat(rule=self._route)

    def _route(self, messages: list[Any]) -> str:
        role = next(r for r, marker in self.markers.items() if marker in messages[0].content)
        self.seen[role].append(messages[-1].content)
        if not self.queues[role]:
            raise AssertionError(f"unexpected {role} call: {messages[-1].content[:400]}")
        return self.queues[role].popleft()

    def calls(self, role: str) -> list[ScriptedCall]:
        return [c for c in self.chat.calls if self.markers[role] in c.messages[0].content]

    def messages(self, role: str) -> list[list[Any]]:
        return [c.messages for c in self.calls(role)]

    def schema(self, role: str, i: int = -1) -> dict[str, Any] | None:
        """The JSON schema sent with the i-th call of ``role``."""
        return self.calls(role)[i].json_schema
