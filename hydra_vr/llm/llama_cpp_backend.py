"""The embedded chat model: a GGUF run in process by llama-cpp-python.

The ``Llama`` object is created on the first call and kept. ``state_cache`` (on by default) keeps, on
disk, the KV state at the end of each stable prefix (every message but the last user turn: a role's
system prompt and few-shot turns): every call starts from its own prefix's state (still in the KV cache,
or restored) and evaluates only its last turn, so a long few-shot prompt is evaluated once per machine,
and a call's greedy answer depends on its prompt alone, not on the calls before it (llama.cpp's numbers
change with how tokens are split into batches). Without it, llama.cpp reuses the previous prompt's
longest common token prefix and ``prompt_cache="ram"`` keeps the KV state of earlier prompts, so
prompts that alternate (planner, coder, reasoner) each find their own prefix again; answers may then
differ with the order of the calls.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import logging
import math
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hydra_vr.llm.base import ChatMessage, ChatResult, LLMError, excluded_words
from hydra_vr.llm.models import DEFAULT_MODEL, INSTALL_HINT, KNOWN_MODELS, ensure_gguf
from hydra_vr.llm.state_cache import PrefixStateCache, StateCacheError

log = logging.getLogger(__name__)

LLAMA_CPP_VERSION = "0.3.36"
# Prefix states a process may add to the disk cache: roles have a handful of stable prefixes, so
# more means a caller whose "prefix" changes every call (a growing conversation), not worth a write each.
MAX_STATE_WRITES = 16
# Context parameters that do not change a saved KV state (threads, callbacks, perf counters).
_STATE_NEUTRAL_PARAMS = re.compile(r"thread|callback|cb_|user_data|sampler|no_perf")
# Tokens kept spare when a long last turn is cut to fit the context: its marker line, and a retokenised seam.
_CUT_MARGIN = 48


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
        state_cache: bool = True,
        state_cache_mb: int = 2048,
        state_cache_min_tokens: int = 256,
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
        self.state_cache = bool(state_cache)
        self.state_cache_mb = int(state_cache_mb)
        self.state_cache_min_tokens = max(1, int(state_cache_min_tokens))
        self.load_seconds: float | None = None
        self._llama: Any = None
        self._path: Path | None = None
        self._lock = threading.Lock()
        self._samples: Counter[int] = Counter()
        self._pieces: list[str] | None = None  # each token id's text, lowercased, without leading spaces or quotes
        self._starts: dict[str, list[int]] = {}  # an excluded word -> the token ids that start it
        self._deadline: float | None = None
        self._timed_out = False
        self._states: PrefixStateCache | None = None
        self._families: dict[str, tuple[int, ...]] = {}  # a role's stable messages -> their prefix tokens (() if short)
        self._state_writes = 0
        self._capture = False

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
        # Recurrent / hybrid models cannot truncate their memory to a prefix, which restoring relies on.
        prefixed = self.state_cache and not (getattr(llm, "_is_recurrent", False) or getattr(llm, "_is_hybrid", False))
        if self.prompt_cache == "ram" and not prefixed:
            # With prefix states each call starts from its own prefix (:meth:`_prefix_state`); the RAM cache would
            # restore a longer state an earlier call left, and the answer would depend on what came before.
            llm.set_cache(_compact_ram_cache(llama_cpp, self.prompt_cache_mb << 20))
        self._install_deadline(llm, llama_cpp)
        self._families.clear()
        if prefixed:
            self._states = PrefixStateCache(
                self.cache_dir / "llm" / "llama-states", self._state_identity(llm, llama_cpp), self.state_cache_mb << 20
            )
        self.load_seconds = time.perf_counter() - start
        self._llama = llm
        return llm

    def _state_identity(self, llm: Any, llama_cpp: Any) -> dict[str, Any]:
        """What a saved KV state depends on: model file, llama.cpp build and CPU, context shape."""
        ctx = llm.context_params
        context = {
            name: value
            for name, _ in ctx._fields_
            if isinstance(value := getattr(ctx, name), (bool, int, float)) and not _STATE_NEUTRAL_PARAMS.search(name)
        }
        mp = llm.model_params
        st = self.model_path.stat()
        return {
            "llama_cpp_python": getattr(llama_cpp, "__version__", "?"),
            "system_info": llama_cpp.llama_print_system_info().decode(errors="replace"),
            "model": self.cache_identity()["model"],
            "model_file": [st.st_size, st.st_mtime_ns],
            "context": context,
            "model_params": {k: getattr(mp, k) for k in ("n_gpu_layers", "split_mode", "main_gpu")},
        }

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
            if self._capture:  # _prompt_tokens: the chat handler's formatted prompt, nothing evaluated
                raise _CapturedPrompt(kwargs.get("prompt", args[0] if args else None))
            criteria = llama_cpp.StoppingCriteriaList([past_deadline, *(stopping_criteria or [])])
            return original(*args, stopping_criteria=criteria, **kwargs)

        llm.create_completion = create_completion

    def close(self) -> None:
        with self._lock:
            llm, self._llama = self._llama, None
            states, self._states = self._states, None
        if states is not None:
            states.close()
        if llm is not None and hasattr(llm, "close"):
            llm.close()

    # -- prefix states on disk ------------------------------------------------------------------
    def _prompt_tokens(self, llm: Any, messages: list[dict[str, str]]) -> list[int] | None:
        """The tokens the chat handler would evaluate for ``messages`` (its own template and tokenizer)."""
        self._capture = True
        try:
            llm.create_chat_completion(messages=messages, max_tokens=1)
        except _CapturedPrompt as captured:
            prompt = captured.prompt
            return [int(t) for t in prompt] if isinstance(prompt, (list, tuple)) else None
        finally:
            self._capture = False
        return None

    def _prefix_state(self, llm: Any, messages: list[dict[str, str]]) -> dict[str, Any]:
        """Start this call from the KV state at the end of its stable prefix: restored, or evaluated and saved.

        The stable prefix is every message but the last user turn (a role's system prompt and few-shot turns).
        Each call then evaluates only its own turn, from the end of that prefix, and the prefix itself is always
        evaluated from the first token. llama.cpp's numbers depend on how the tokens are split into batches, so
        this makes a call's greedy answer a function of its prompt alone: not of the calls before it in the
        process (which left other tokens in the KV cache), nor of a run being resumed or split over workers.
        The state is on disk once per prefix; in a process, a call whose prefix is still in the KV cache only
        drops what the previous call added after it. A call with a short or no stable prefix is evaluated
        from the first token.
        """
        if self._states is None:
            return {}
        family = hashlib.sha256(json.dumps(messages[:-1]).encode()).hexdigest()
        first = family not in self._families
        if first:
            found = self._stable_prefix(llm, messages)
            if found is None:  # this prompt is too long for the context: llama.cpp refuses it, the family is not judged
                return {}
            self._families[family] = found
        prefix = list(self._families[family])
        n = len(prefix)
        if n < self.state_cache_min_tokens:
            llm.n_tokens = 0  # evaluated from the start, whatever the cache held
            return {"state_cache": "short", "state_cache_tokens": n} if first else {}
        if _common_prefix(llm.input_ids[: llm.n_tokens], prefix) == n:
            llm.n_tokens = n  # the prefix is in the KV cache: drop what the last call added after it
            return {"state_cache": "in memory", "state_cache_tokens": n} if first else {}
        states = self._states
        start = time.perf_counter()
        try:
            lookup = states.get(prefix)
            if lookup.state is not None:
                try:
                    self._load_kv(llm, prefix, lookup.state)
                    return {"state_cache": "hit", "state_cache_tokens": n, "state_cache_seconds": time.perf_counter() - start}
                except RuntimeError as exc:  # llama.cpp refused it (layout of another build): rebuild
                    states.discard(states.key(prefix))
                    llm.reset()
                    log.warning("llama.cpp refused the prefix state in %s (%s); rebuilding it", states.directory, exc)
                    lookup.status = f"corrupt: llama.cpp refused it ({exc})"
            llm.n_tokens = 0
            llm.eval(prefix)  # from the first token, as every process evaluates it; drops the KV cells past n_tokens first
            if self._state_writes >= MAX_STATE_WRITES:
                return {"state_cache": lookup.status, "state_cache_tokens": n}
            save_start = time.perf_counter()
            written = states.put(prefix, _kv_state(llm))
        except StateCacheError as exc:  # a read-only or full disk... must not fail the call
            log.warning("llama.cpp prefix states in %s disabled for this process: %s", states.directory, exc)
            self._states = None
            states.close()
            return {"state_cache": f"off: {exc}"}
        self._state_writes += 1
        return {
            "state_cache": "stored" if lookup.status == "miss" else f"rebuilt after {lookup.status}",
            "state_cache_tokens": n,
            "state_cache_bytes": written,
            "state_cache_seconds": time.perf_counter() - save_start,
        }

    def _stable_prefix(self, llm: Any, messages: list[dict[str, str]]) -> tuple[int, ...] | None:
        """The tokens a call of ``messages`` shares with every call of its role (all but the last user turn);
        () when there is no such prefix (one message, or an unusual chat handler); None when this prompt is longer
        than the context (llama.cpp refuses it; the role's next call may fit, so nothing is kept)."""
        if len(messages) < 2 or messages[-1]["role"] != "user":
            return ()
        full = self._prompt_tokens(llm, messages)
        head = self._prompt_tokens(llm, messages[:-1])
        if full is None or head is None:
            return ()  # an unusual handler
        if len(full) >= llm.n_ctx():
            return None
        # The template's generation prompt ends ``head``: keep only what the real call shares, and
        # leave at least one token to evaluate (sampling needs fresh logits).
        return tuple(full[: min(_common_prefix(full, head), len(full) - 1)])

    @staticmethod
    def _load_kv(llm: Any, prefix: list[int], state: memoryview) -> None:
        from llama_cpp import LlamaState

        input_ids = np.zeros(len(llm.input_ids), dtype=np.intc)
        input_ids[: len(prefix)] = prefix
        llm.load_state(
            LlamaState(
                input_ids=input_ids,
                # load_state broadcasts one row; it is never read: generation re-evaluates a token first.
                scores=np.zeros((1, llm.n_vocab()), dtype=np.single),
                n_tokens=len(prefix),
                llama_state=state,  # type: ignore[arg-type]  # any buffer: load_state copies it
                llama_state_size=len(state),
                seed=getattr(llm, "_seed", 0),  # keep this process's sampling seed
            )
        )

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
        avoid: tuple[str, ...] = ()
        if json_schema is not None:
            # llama-cpp-python turns the schema into a grammar: output is valid JSON of that shape.
            schema, avoid = excluded_words(json_schema)
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
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
            if avoid:  # the grammar cannot say "any string but these": bias against the tokens that start them
                kwargs["logit_bias"] = dict.fromkeys(self._starting_tokens(llm, avoid), -100.0)
            start = time.perf_counter()
            perf_before = _perf(llm)
            kwargs["messages"], cut = self._fit_context(llm, kwargs["messages"], int(max_tokens))
            try:
                state_meta = self._prefix_state(llm, kwargs["messages"])
            except (ValueError, RuntimeError) as exc:  # a decode failure: report it like the call's own
                raise LLMError(f"{self.name}: {exc}") from exc
            self._deadline = time.perf_counter() + self.timeout if self.timeout else None
            self._timed_out = False
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
                **state_meta,
                **({"prompt_cut_tokens": cut} if cut else {}),
            },
        )

    def _fit_context(self, llm: Any, messages: list[dict[str, str]], max_tokens: int) -> tuple[list[dict[str, str]], int]:
        """``messages`` with the middle of the last user turn cut, when the prompt leaves the reply less room than
        ``max_tokens`` (at most a quarter of the context); the tokens cut (0 when nothing was).

        A role's last turn holds the question first and the instruction last, with the steps so far (memory, an
        earlier program, its error) between: a long run of steps otherwise ends the question with llama.cpp's
        "exceed context window" error. The stable prefix (system and example turns) is never touched, so its
        saved state stays valid; when the prefix alone is too long nothing is cut and llama.cpp refuses the call."""
        if not messages or messages[-1]["role"] != "user":
            return messages, 0
        full = self._prompt_tokens(llm, messages)
        if full is None:
            return messages, 0
        room = llm.n_ctx() - min(max(int(max_tokens), 1), llm.n_ctx() // 4)
        over = len(full) - room
        if over <= 0:
            return messages, 0
        turn = llm.tokenize(messages[-1]["content"].encode("utf-8"), add_bos=False, special=False)
        cut = over + _CUT_MARGIN
        keep = len(turn) - cut
        if keep < _CUT_MARGIN:  # the turn is not what makes the prompt long
            return messages, 0
        head = keep // 3  # the question and what the turn starts with; the instruction and newest steps end it
        text = lambda tokens: llm.detokenize(tokens).decode("utf-8", errors="ignore")
        shortened = (f"{text(turn[:head])}\n[... {cut} tokens cut here to fit the model's {llm.n_ctx()}-token context ...]\n"
                     f"{text(turn[len(turn) - (keep - head):])}")
        return [*messages[:-1], {"role": "user", "content": shortened}], cut

    def _starting_tokens(self, llm: Any, words: tuple[str, ...]) -> list[int]:
        """Ids of the vocabulary's tokens that spell the start of one of ``words``, any case, after spaces,
        quotes or brackets: "unknown", " Unknown", "unkno", "\"none", "non". A start must hold 60% of the
        word (at least 3 letters), so that "none" does not ban "no" nor "unknown" ban "un"; a word shorter
        than that ("no") is banned as a whole token only."""
        if self._pieces is None:  # the vocabulary read once; each word's scan over it is then quick
            self._pieces = [llm.detokenize([tid]).decode("utf-8", errors="ignore").strip().lstrip("\"'[({").lower()
                            for tid in range(llm.n_vocab())]
        ids: set[int] = set()
        for w in dict.fromkeys(w.lower() for w in words):
            if w not in self._starts:
                least = max(3, math.ceil(0.6 * len(w)))
                self._starts[w] = [t for t, p in enumerate(self._pieces) if p == w or len(p) >= least and w.startswith(p)]
            ids.update(self._starts[w])
        return sorted(ids)

    def __repr__(self) -> str:
        return f"LlamaCppChat(model={self.model!r}, n_ctx={self.n_ctx}, n_threads={self.n_threads})"


class _CapturedPrompt(Exception):
    """Raised by create_completion while capturing: carries the prompt the chat handler built."""

    def __init__(self, prompt: Any) -> None:
        super().__init__("prompt captured")
        self.prompt = prompt


def _common_prefix(a: Sequence[int] | np.ndarray, b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _kv_state(llm: Any) -> memoryview:
    """The context's state bytes, as ``Llama.save_state`` gets them, without its copy of up to
    n_batch rows of logits (300 MB for Qwen) that a prefix state never needs."""
    import llama_cpp

    size = llama_cpp.llama_state_get_size(llm._ctx.ctx)
    buffer = (ctypes.c_uint8 * int(size))()
    n = int(llama_cpp.llama_state_get_data(llm._ctx.ctx, buffer, size))
    if n <= 0 or n > int(size):
        raise RuntimeError(f"llama_state_get_data returned {n} of {size} bytes")
    return memoryview(buffer).cast("B")[:n]


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
