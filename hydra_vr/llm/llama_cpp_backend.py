"""The embedded chat model: a GGUF run in process by llama-cpp-python.

The ``Llama`` object is created on the first call and kept, because llama.cpp reuses the KV cache
of the previous prompt's longest common token prefix: a long few-shot prompt is evaluated once
and later calls that share it only pay for their new tokens. ``prompt_cache="ram"`` additionally
keeps the KV state of earlier prompts, so prompts that alternate (planner, coder, reasoner) each
find their own prefix again.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra_vr.llm.base import ChatMessage, ChatResult, LLMError
from hydra_vr.llm.models import DEFAULT_MODEL, INSTALL_HINT, KNOWN_MODELS, ensure_gguf

LLAMA_CPP_VERSION = "0.3.36"


def default_threads() -> int:
    """CPUs this process may use, capped: llama.cpp gains little past ~16 threads on CPU."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        n = os.cpu_count() or 2
    return max(1, min(n, 16))


def import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise LLMError(
            f"llama-cpp-python is not installed ({exc}). Install it with `{INSTALL_HINT}` "
            "(it builds llama-cpp-python with the CPU flags that work here; a plain pip install may crash)"
        ) from exc
    return llama_cpp


class LlamaCppChat:
    """Chat with a local GGUF model. Not safe to share across processes; calls are serialised by a lock."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        cache_dir: Path | str = "~/.cache/hydra-vr",
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_batch: int = 512,
        n_gpu_layers: int = 0,
        seed: int = 0,
        timeout: float | None = 600.0,
        prompt_cache: str = "ram",
        prompt_cache_mb: int = 1024,
        chat_format: str | None = None,
    ) -> None:
        if prompt_cache not in ("ram", "none"):
            raise LLMError(f"llama_cpp option prompt_cache must be 'ram' or 'none', got {prompt_cache!r}")
        self.model = model
        self.name = f"llama_cpp:{model if model in KNOWN_MODELS else Path(model).name}"
        self.cache_dir = Path(cache_dir).expanduser()
        self.n_ctx = int(n_ctx)
        self.n_threads = int(n_threads) if n_threads else default_threads()
        self.n_batch = int(n_batch)
        self.n_gpu_layers = int(n_gpu_layers)
        self.seed = int(seed)
        self.timeout = float(timeout) if timeout else None
        self.prompt_cache = prompt_cache
        self.prompt_cache_mb = int(prompt_cache_mb)
        self.chat_format = chat_format
        self.load_seconds: float | None = None
        self._llama: Any = None
        self._path: Path | None = None
        self._lock = threading.Lock()
        self._samples: Counter[int] = Counter()
        self._deadline: float | None = None
        self._timed_out = False

    # -- loading ----------------------------------------------------------------------------
    @property
    def model_path(self) -> Path:
        if self._path is None:
            self._path = ensure_gguf(self.model, self.cache_dir)
        return self._path

    def cache_identity(self) -> dict[str, Any]:
        spec = KNOWN_MODELS.get(self.model)
        if spec is not None:
            model_id: Any = spec.sha256
        else:  # a user file: path + size + mtime stand in for its content (hashing GBs per run is too slow)
            path = self.model_path  # raises LLMError for a missing file or an unknown name
            st = path.stat()
            model_id = [str(path.resolve()), st.st_size, st.st_mtime_ns]
        return {"backend": "llama_cpp", "model": model_id, "seed": self.seed, "chat_format": self.chat_format}

    def load(self) -> Any:
        """The ``Llama`` object, created on first use."""
        with self._lock:
            return self._load_locked()

    def _load_locked(self) -> Any:
        if self._llama is not None:
            return self._llama
        llama_cpp = import_llama_cpp()
        path = self.model_path
        start = time.perf_counter()
        try:
            llm = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                n_batch=self.n_batch,
                n_gpu_layers=self.n_gpu_layers,
                seed=self.seed,
                chat_format=self.chat_format,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise LLMError(f"llama.cpp could not load {path}: {exc}") from exc
        if self.prompt_cache == "ram":
            llm.set_cache(_compact_ram_cache(llama_cpp, self.prompt_cache_mb << 20))
        self._install_deadline(llm, llama_cpp)
        self.load_seconds = time.perf_counter() - start
        self._llama = llm
        return llm

    def _install_deadline(self, llm: Any, llama_cpp: Any) -> None:
        """Stop generation at ``self._deadline``: llama.cpp has no timeout, and create_chat_completion
        takes no stopping criteria, but the chat handler passes its own to create_completion, so this
        instance's create_completion adds one more. (A logits processor would run inside a C
        callback, where an exception cannot stop anything.)"""
        original = llm.create_completion

        def past_deadline(input_ids: Any, logits: Any) -> bool:
            if self._deadline is not None and time.perf_counter() > self._deadline:
                self._timed_out = True
                return True
            return False

        def create_completion(*args: Any, stopping_criteria: Any = None, **kwargs: Any) -> Any:
            criteria = llama_cpp.StoppingCriteriaList([past_deadline, *(stopping_criteria or [])])
            return original(*args, stopping_criteria=criteria, **kwargs)

        llm.create_completion = create_completion

    def close(self) -> None:
        with self._lock:
            llm, self._llama = self._llama, None
        if llm is not None and hasattr(llm, "close"):
            llm.close()

    # -- chat -------------------------------------------------------------------------------
    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        stop: Sequence[str] | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        kwargs: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": int(max_tokens),
            "temperature": float(temperature),
            "stop": list(stop) if stop else None,
        }
        if json_schema is not None:
            # llama-cpp-python turns the schema into a grammar: output is valid JSON of that shape.
            kwargs["response_format"] = {"type": "json_object", "schema": json_schema}
        with self._lock:
            if temperature > 0:
                # llama-cpp-python reseeds every call from one fixed seed, so repeated samples of a
                # prompt would be identical: the n-th sample of a prompt gets its own seed instead
                # (diverse, and the same on a rerun).
                prompt_key = hash((json.dumps(kwargs["messages"]), json.dumps(json_schema, sort_keys=True)))
                occurrence = self._samples[prompt_key]
                self._samples[prompt_key] += 1
                kwargs["seed"] = (self.seed * 1_000_003 + occurrence) % 2**31
            llm = self._load_locked()
            start = time.perf_counter()
            self._deadline = start + self.timeout if self.timeout else None
            self._timed_out = False
            perf_before = _perf(llm)
            try:
                response = llm.create_chat_completion(**kwargs)
            except ValueError as exc:  # e.g. prompt longer than n_ctx
                raise LLMError(f"{self.name}: {exc}") from exc
            finally:
                self._deadline = None
            seconds = time.perf_counter() - start
            perf_after = _perf(llm)
            if self._timed_out:
                raise LLMError(
                    f"{self.name}: generation stopped at timeout={self.timeout:g}s after {seconds:.1f}s "
                    f"(max_tokens={max_tokens}); raise the llama_cpp option timeout or lower max_tokens"
                )
        choice = response["choices"][0]
        usage = response.get("usage") or {}
        return ChatResult(
            text=choice["message"].get("content") or "",
            model=self.name,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            seconds=seconds,
            meta={
                "finish_reason": choice.get("finish_reason"),
                # What llama.cpp actually computed: prompt tokens not found in the KV cache, and timings.
                **{k: perf_after[k] - perf_before[k] for k in perf_after.keys() & perf_before.keys()},
            },
        )

    def __repr__(self) -> str:
        return f"LlamaCppChat(model={self.model!r}, n_ctx={self.n_ctx}, n_threads={self.n_threads})"


def _perf(llm: Any) -> dict[str, float]:
    """llama.cpp's cumulative counters (prompt tokens evaluated, decode steps, milliseconds)."""
    try:
        import llama_cpp

        data = llama_cpp.llama_perf_context(llm._ctx.ctx)
    except Exception:  # private attribute; counters are informative only
        return {}
    return {
        "prompt_eval_tokens": data.n_p_eval,
        "prompt_eval_ms": data.t_p_eval_ms,
        "eval_tokens": data.n_eval,
        "eval_ms": data.t_eval_ms,
    }


def _compact_ram_cache(llama_cpp: Any, capacity_bytes: int) -> Any:
    """A ``LlamaRAMCache`` whose states keep only the last row of logits, and count it.

    Upstream states hold up to n_batch rows of logits (512 x 151,936 floats = 311 MB for Qwen)
    that its capacity check does not count, so "1 GB" could grow to many GB. The rows are not
    needed: after ``load_state`` llama-cpp-python re-evaluates at least one token, which refreshes
    the logits, and ``load_state`` broadcasts a single row into its score buffer.
    """

    class CompactRAMCache(llama_cpp.LlamaRAMCache):  # type: ignore[misc, name-defined]
        @property
        def cache_size(self) -> int:
            return sum(st.llama_state_size + st.scores.nbytes + st.input_ids.nbytes for st in self.cache_state.values())

        def __setitem__(self, key: Any, value: Any) -> None:
            if value.scores.ndim == 2 and value.scores.shape[0] > 1:
                value.scores = value.scores[-1:].copy()
            super().__setitem__(key, value)

    return CompactRAMCache(capacity_bytes=capacity_bytes)
