"""The one place where every backend gets a disk cache, retries and a usage counter.

``build_chat_model`` / ``build_embedder`` wrap whatever backend the config names in
:class:`ManagedChatModel` / :class:`ManagedEmbedder`, so backends only talk to their model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from hydra_vr.llm.base import ChatMessage, ChatModel, ChatResult, Embedder, LLMError

log = logging.getLogger(__name__)

# Bump when the cached value layout or key recipe changes, so old entries are never misread.
CACHE_VERSION = 1


class TransientLLMError(LLMError):
    """A failure worth retrying (timeout, rate limit, server 5xx); backends raise it, the wrapper retries."""


@dataclass
class Usage:
    """Counters the agent loop reads for traces. ``seconds`` is wall time inside chat/embed calls."""

    calls: int = 0  # chat (or embed) calls received, cache hits included
    cache_hits: int = 0
    model_calls: int = 0  # calls that reached the model (after retries: one per successful call)
    retries: int = 0
    errors: int = 0  # calls that ended in an exception
    prompt_tokens: int = 0  # only tokens the model actually processed (hits cost nothing)
    completion_tokens: int = 0
    texts: int = 0  # embeddings: texts requested
    seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **deltas: float) -> None:
        with self._lock:
            for key, value in deltas.items():
                setattr(self, key, getattr(self, key) + value)

    def snapshot(self) -> dict[str, float]:
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}

    def since(self, earlier: dict[str, float]) -> dict[str, float]:
        """Counter deltas since an earlier :meth:`snapshot` (one question's cost, say)."""
        now = self.snapshot()
        return {k: now[k] - earlier.get(k, 0) for k in now}

    def reset(self) -> None:
        with self._lock:
            for f in fields(self):
                if not f.name.startswith("_"):
                    setattr(self, f.name, type(getattr(self, f.name))(0))


def _stable_hash(payload: dict[str, Any]) -> str:
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def chat_cache_key(
    identity: dict[str, Any],
    messages: Sequence[ChatMessage],
    *,
    max_tokens: int,
    temperature: float,
    stop: Sequence[str] | None,
    json_schema: dict[str, Any] | None,
    occurrence: int = 0,
) -> str:
    """Key of one chat call: backend identity (backend, model, ...) + messages + every parameter."""
    return _stable_hash(
        {
            "v": CACHE_VERSION,
            "identity": identity,
            "messages": [[m.role, m.content] for m in messages],
            "max_tokens": max_tokens,
            "temperature": float(temperature),
            "stop": list(stop) if stop else None,
            "json_schema": json_schema,
            "occurrence": occurrence,
        }
    )


def backend_identity(model: Any) -> dict[str, Any]:
    """What distinguishes one backend's outputs from another's, for cache keys."""
    ident = getattr(model, "cache_identity", None)
    if callable(ident):
        return dict(ident())
    return {"class": f"{type(model).__module__}.{type(model).__qualname__}", "name": getattr(model, "name", "")}


def _open_cache(directory: Path) -> Any:
    import diskcache  # heavy-ish (sqlite); only when a cache is used

    directory.mkdir(parents=True, exist_ok=True)
    return diskcache.Cache(str(directory), size_limit=2**30)


def _retrying(max_retries: int, retry_wait: float, usage: Usage) -> Any:
    import tenacity

    def before_sleep(state: tenacity.RetryCallState) -> None:
        usage.add(retries=1)
        exc = state.outcome.exception() if state.outcome else None
        log.warning("LLM call failed (%s), retry %d of %d", exc, state.attempt_number, max_retries)

    return tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(TransientLLMError),
        stop=tenacity.stop_after_attempt(max_retries + 1),
        wait=tenacity.wait_exponential(multiplier=retry_wait, min=retry_wait, max=max(retry_wait, 30.0)),
        before_sleep=before_sleep,
        reraise=True,
    )


class _Managed:
    """What both wrappers share: the inner backend, a :class:`Usage` counter, retries of transient errors and
    a disk cache opened on first use (in ``cache_dir/llm/<kind>``; ``cache=False`` or no ``cache_dir``: none)."""

    kind = ""

    def __init__(self, inner: Any, *, cache_dir: Path | None = None, cache: bool = True, max_retries: int = 2,
                 retry_wait: float = 1.0) -> None:
        self.inner = inner
        self.name = inner.name
        self.usage = Usage()
        self.max_retries = max(0, int(max_retries))
        self.retry_wait = float(retry_wait)
        self._cache_dir = Path(cache_dir) / "llm" / self.kind if (cache and cache_dir is not None) else None
        self._cache: Any = None

    @property
    def cache_enabled(self) -> bool:
        return self._cache_dir is not None

    def _get_cache(self) -> Any:
        if self._cache is None and self._cache_dir is not None:
            self._cache = _open_cache(self._cache_dir)
        return self._cache

    def _call(self, fn: Any, *args: Any, start: float, **kwargs: Any) -> Any:
        """``fn`` with retries; a call that still fails is counted (an error, its seconds since ``start``)."""
        try:
            return _retrying(self.max_retries, self.retry_wait, self.usage)(fn, *args, **kwargs)
        except Exception:
            self.usage.add(calls=1, errors=1, seconds=time.perf_counter() - start)
            raise

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        closer = getattr(self.inner, "close", None)
        if callable(closer):
            closer()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r}, cache={self.cache_enabled})"


class ManagedChatModel(_Managed):
    """A ChatModel wrapping a backend with a disk cache, retries and a :class:`Usage` counter.

    With temperature > 0 the n-th identical call in this object's lifetime gets its own cache slot,
    so sampling several answers still gives different samples while a rerun of the same program
    replays the same sequence from the cache.
    """

    kind = "chat"

    def __init__(self, inner: ChatModel, **options: Any) -> None:
        super().__init__(inner, **options)
        self._identity: dict[str, Any] | None = None
        self._occurrences: Counter[str] = Counter()
        self._lock = threading.Lock()

    def cache_key(self, messages: Sequence[ChatMessage], **params: Any) -> str:
        """The disk-cache key of one call: ``params`` are :meth:`chat`'s keywords, all four, and ``occurrence``."""
        if self._identity is None:
            self._identity = backend_identity(self.inner)
        return chat_cache_key(self._identity, messages, **params)

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        stop: Sequence[str] | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        start = time.perf_counter()
        messages = list(messages)
        params = dict(max_tokens=max_tokens, temperature=temperature, stop=stop, json_schema=json_schema)
        key = None
        cache = self._get_cache()
        if cache is not None:
            base_key = self.cache_key(messages, **params)
            occurrence = 0
            if temperature > 0:
                with self._lock:
                    occurrence = self._occurrences[base_key]
                    self._occurrences[base_key] += 1
            key = base_key if occurrence == 0 else self.cache_key(messages, **params, occurrence=occurrence)
            hit = cache.get(key)
            if hit is not None:
                elapsed = time.perf_counter() - start
                self.usage.add(calls=1, cache_hits=1, seconds=elapsed)
                meta = dict(hit.get("meta", {}), cache_key=key, original_seconds=hit["seconds"])
                return ChatResult(
                    text=hit["text"],
                    model=hit["model"],
                    prompt_tokens=hit["prompt_tokens"],
                    completion_tokens=hit["completion_tokens"],
                    seconds=elapsed,
                    cached=True,
                    meta=meta,
                )
        result = self._call(self.inner.chat, messages, start=start, **params)
        elapsed = time.perf_counter() - start
        self.usage.add(
            calls=1,
            model_calls=1,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            seconds=elapsed,
        )
        if cache is not None and key is not None:
            value = asdict(result)
            value.pop("cached", None)
            cache.set(key, value)
            result.meta = dict(result.meta, cache_key=key)
        return result


class ManagedEmbedder(_Managed):
    """An Embedder with an optional per-text disk cache, retries and a :class:`Usage` counter."""

    kind = "embed"

    def __init__(self, inner: Embedder, **options: Any) -> None:
        super().__init__(inner, **options)
        self.dim = inner.dim
        self._prefix: str | None = None

    def _key(self, text: str) -> str:
        if self._prefix is None:
            self._prefix = _stable_hash({"v": CACHE_VERSION, "identity": backend_identity(self.inner)})
        return self._prefix + hashlib.sha256(text.encode()).hexdigest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        start = time.perf_counter()
        texts = list(texts)
        cache = self._get_cache()
        rows: list[np.ndarray | None] = [None] * len(texts)
        if cache is not None:
            for i, text in enumerate(texts):
                rows[i] = cache.get(self._key(text))
        todo = [i for i, row in enumerate(rows) if row is None]
        if todo:
            fresh = np.asarray(self._call(self.inner.embed, [texts[i] for i in todo], start=start), dtype=np.float32)
            for j, i in enumerate(todo):
                rows[i] = fresh[j]
                if cache is not None:
                    cache.set(self._key(texts[i]), fresh[j])
        out = np.stack(rows).astype(np.float32) if texts else np.zeros((0, self.dim), dtype=np.float32)
        self.usage.add(
            calls=1,
            texts=len(texts),
            cache_hits=len(texts) - len(todo),
            model_calls=1 if todo else 0,
            seconds=time.perf_counter() - start,
        )
        return out


def usage_snapshot(llm: Any) -> dict[str, float]:
    """The usage counters of ``llm`` (a ManagedChatModel), or {} for a model that keeps none."""
    usage = getattr(llm, "usage", None)
    return usage.snapshot() if usage is not None else {}


def usage_since(llm: Any, before: dict[str, float]) -> dict[str, float]:
    """Usage of ``llm`` since :func:`usage_snapshot` returned ``before``."""
    usage = getattr(llm, "usage", None)
    return usage.since(before) if usage is not None else {}
