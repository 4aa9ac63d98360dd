"""Peak prompt tokens per role: the size of the largest context each role of a strategy was given.

HierVA's claim is about context, not total tokens: a manager that keeps one-line summaries and
workers that see one image and one instruction should each stay small. :class:`PeakTokenRecorder`
wraps the episode's chat model; a strategy calls through ``recorder.role("manager")`` (a chat
model that records under that role), and calls straight on the recorder count as ``other``.

The facade (:class:`hydra_vr.agent.loop.HydraAgent`) sets ``result.llm`` from ``ctx.llm.usage``
*after* the strategy returns, so a dict written there by the strategy would be replaced. The
recorder therefore stays installed as ``ctx.llm`` after the episode, and its ``usage`` view adds
``peak_prompt_tokens`` ({role: n}) to what the facade reads; :meth:`PeakTokenRecorder.install`
reuses (and resets) an installed recorder, so recorders never nest.

Usage::

    recorder = PeakTokenRecorder.install(ctx)   # at the start of the strategy's run()
    manager = recorder.role("manager")           # a ChatModel
    manager.chat(messages, ...)
    recorder.peaks                               # {"manager": 812}
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from hydra_vr.llm.base import ChatMessage, ChatModel, ChatResult

PEAK_KEY = "peak_prompt_tokens"


class PeakTokenRecorder:
    """A thin ChatModel wrapper: forwards every call, keeps the max prompt tokens seen per role."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.name = inner.name
        self._peaks: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def install(cls, ctx: Any) -> PeakTokenRecorder:
        """Wrap ``ctx.llm`` (or reset the recorder already there) for a new episode."""
        current = ctx.llm
        if isinstance(current, PeakTokenRecorder):
            current.reset()
            return current
        recorder = cls(current)
        ctx.llm = recorder
        return recorder

    @property
    def peaks(self) -> dict[str, int]:
        with self._lock:
            return dict(self._peaks)

    def reset(self) -> None:
        with self._lock:
            self._peaks.clear()

    def role(self, name: str) -> ChatModel:
        """A chat model whose calls count toward ``name``'s peak."""
        return _RoleView(self, name)

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResult:
        return self.chat_as("other", messages, **kwargs)

    def chat_as(self, role: str, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResult:
        result = self.inner.chat(messages, **kwargs)
        with self._lock:
            self._peaks[role] = max(self._peaks.get(role, 0), int(result.prompt_tokens or 0))
        return result

    @property
    def usage(self) -> _UsageView:
        return _UsageView(self)

    def __getattr__(self, name: str) -> Any:  # cache_enabled, close, cache_key...: the inner model's
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"PeakTokenRecorder({self.inner!r})"


class _RoleView:
    def __init__(self, recorder: PeakTokenRecorder, role: str) -> None:
        self.recorder, self.role = recorder, role
        self.name = recorder.name

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResult:
        return self.recorder.chat_as(self.role, messages, **kwargs)


class _UsageView:
    """The inner model's usage counters, plus the peaks in :meth:`since` (what the facade stores)."""

    def __init__(self, recorder: PeakTokenRecorder) -> None:
        self._recorder = recorder
        self._inner = getattr(recorder.inner, "usage", None)

    def snapshot(self) -> dict[str, float]:
        return self._inner.snapshot() if self._inner is not None else {}

    def since(self, earlier: dict[str, float]) -> dict[str, Any]:
        base = self._inner.since(earlier) if self._inner is not None else {}
        return {**base, PEAK_KEY: self._recorder.peaks}

    def __getattr__(self, name: str) -> Any:  # add, reset...
        if self._inner is None:
            raise AttributeError(name)
        return getattr(self._inner, name)


__all__ = ["PEAK_KEY", "PeakTokenRecorder"]
