"""Chat and embeddings through the ``openai`` SDK, against OpenAI or any compatible server
(vLLM, llama.cpp's server, Ollama, LM Studio...)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from hydra_vr.llm.base import ChatMessage, ChatResult, LLMError, excluded_words
from hydra_vr.llm.wrapper import TransientLLMError

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Local servers ignore the key but the SDK insists on one.
PLACEHOLDER_KEY = "sk-no-key-required"

# Ways to ask for schema-shaped JSON, most to least specific; the first one the server accepts is kept.
_JSON_MODES = ("json_schema", "json_object_schema", "json_object", "prompt")


def _make_client(base_url: str, api_key_env: str, timeout: float, connect_timeout: float) -> Any:
    import openai

    key = os.environ.get(api_key_env)
    if not key:
        if base_url.rstrip("/") == DEFAULT_BASE_URL:
            raise LLMError(f"the openai backend needs an API key: set the environment variable {api_key_env}")
        key = PLACEHOLDER_KEY
    return openai.OpenAI(
        api_key=key,
        base_url=base_url,
        # A short connect timeout makes a wrong URL fail in seconds instead of after the read timeout.
        timeout=openai.Timeout(timeout, connect=min(connect_timeout, timeout)),
        max_retries=0,  # retries happen once, in the wrapper
    )


def _translate(exc: Exception, base_url: str, what: str) -> LLMError:
    """Map an SDK exception to LLMError (permanent) or TransientLLMError (worth retrying)."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return TransientLLMError(f"{what}: request to {base_url} timed out")
    if isinstance(exc, openai.APIConnectionError):
        return LLMError(
            f"{what}: cannot reach {base_url} ({exc.__cause__ or exc}). Check that the server is running "
            "and that base_url (host, port, the /v1 suffix) is right."
        )
    if isinstance(exc, openai.RateLimitError):
        return TransientLLMError(f"{what}: rate limited by {base_url}: {exc}")
    if isinstance(exc, openai.AuthenticationError):
        return LLMError(f"{what}: {base_url} rejected the API key ({exc}); check the api_key_env variable")
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code >= 500 or exc.status_code == 408:
            return TransientLLMError(f"{what}: {base_url} answered {exc.status_code}: {exc}")
        return LLMError(f"{what}: {base_url} answered {exc.status_code}: {exc}")
    return LLMError(f"{what}: {exc}")


class OpenAIChat:
    """Chat completions over HTTP. Options: base_url, model, api_key_env, timeout, connect_timeout."""

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 120.0,
        connect_timeout: float = 5.0,
        seed: int | None = None,
        json_mode: str | None = None,
    ) -> None:
        if json_mode is not None and json_mode not in _JSON_MODES:
            raise LLMError(f"openai option json_mode must be one of {_JSON_MODES}, got {json_mode!r}")
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.connect_timeout = float(connect_timeout)
        self.seed = seed
        self.name = f"openai:{model}"
        self._json_mode = json_mode  # learnt on the first schema call unless given
        self._client: Any = None
        self._lock = threading.Lock()

    def cache_identity(self) -> dict[str, Any]:
        return {"backend": "openai", "base_url": self.base_url.rstrip("/"), "model": self.model, "seed": self.seed}

    @property
    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = _make_client(self.base_url, self.api_key_env, self.timeout, self.connect_timeout)
            return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _response_format(self, mode: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        if mode == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": "response", "schema": schema}}
        if mode == "json_object_schema":  # llama.cpp-style servers take the schema beside json_object
            return {"type": "json_object", "schema": schema}
        if mode == "json_object":
            return {"type": "json_object"}
        return None

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        stop: Sequence[str] | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        import openai

        msgs = [{"role": m.role, "content": m.content} for m in messages]
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": int(max_tokens), "temperature": float(temperature)}
        if stop:
            kwargs["stop"] = list(stop)
        if self.seed is not None:
            kwargs["seed"] = self.seed
        modes: Sequence[str] = [None]  # type: ignore[list-item]
        if json_schema is not None:
            json_schema = excluded_words(json_schema)[0]  # servers may reject "not"; no token ids to bias here
            modes = [self._json_mode] if self._json_mode else list(_JSON_MODES)
        start = time.perf_counter()
        last_exc: Exception | None = None
        for mode in modes:
            call = dict(kwargs)
            call_msgs = msgs
            if mode is not None:
                fmt = self._response_format(mode, json_schema or {})
                if fmt is not None:
                    call["response_format"] = fmt
                if mode in ("json_object", "prompt"):
                    # The server won't enforce the shape: say it in the prompt (json_object also needs "JSON" there).
                    import json

                    hint = f"Answer with JSON only, matching this JSON schema:\n{json.dumps(json_schema)}"
                    call_msgs = [{"role": "system", "content": hint}, *msgs]
            try:
                response = self.client.chat.completions.create(messages=call_msgs, **call)
            except openai.APIStatusError as exc:
                # Servers reject an unknown response_format with 400/422, or (llama.cpp's) a 500
                # naming it: try the next, less specific way of asking for JSON.
                rejected = exc.status_code in (400, 422) or "response_format" in str(exc)
                if mode is None or len(modes) == 1 or not rejected:
                    raise _translate(exc, self.base_url, self.name) from exc
                last_exc = exc
                continue
            except openai.OpenAIError as exc:
                raise _translate(exc, self.base_url, self.name) from exc
            if mode is not None:
                self._json_mode = mode
            break
        else:
            raise _translate(last_exc or LLMError("no JSON mode accepted"), self.base_url, self.name)
        choice = response.choices[0]
        usage = response.usage
        return ChatResult(
            text=choice.message.content or "",
            model=response.model or self.model,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            seconds=time.perf_counter() - start,
            meta={"finish_reason": choice.finish_reason, "json_mode": mode},
        )

    def __repr__(self) -> str:
        return f"OpenAIChat(model={self.model!r}, base_url={self.base_url!r})"


class OpenAIEmbedder:
    """Embeddings API. ``dim`` is sent as ``dimensions`` only when set (text-embedding-3 models take it)."""

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        dim: int | None = None,
        timeout: float = 60.0,
        connect_timeout: float = 5.0,
        batch_size: int = 256,
    ) -> None:
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self.api_key_env = api_key_env
        self._send_dim = dim is not None
        self.dim = int(dim) if dim is not None else 1536
        self.timeout = float(timeout)
        self.connect_timeout = float(connect_timeout)
        self.batch_size = int(batch_size)
        self.name = f"openai:{model}"
        self._client: Any = None

    def cache_identity(self) -> dict[str, Any]:
        return {"backend": "openai", "base_url": self.base_url.rstrip("/"), "model": self.model, "dim": self.dim}

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = _make_client(self.base_url, self.api_key_env, self.timeout, self.connect_timeout)
        return self._client

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import openai

        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for lo in range(0, len(texts), self.batch_size):
            batch = texts[lo : lo + self.batch_size]
            extra: dict[str, Any] = {"dimensions": self.dim} if self._send_dim else {}
            try:
                response = self.client.embeddings.create(input=batch, model=self.model, **extra)
            except openai.OpenAIError as exc:
                raise _translate(exc, self.base_url, self.name) from exc
            for item in response.data:
                vec = np.asarray(item.embedding, dtype=np.float32)
                if vec.shape != (self.dim,):
                    raise LLMError(
                        f"{self.name} returned {vec.shape[0]}-d embeddings, configured dim={self.dim}; set the dim option"
                    )
                out[lo + item.index] = vec
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.base_url!r}, dim={self.dim})"
