"""Config -> chat model / embedder, through the registries.

A backend factory is called with the config's ``options`` as keyword arguments, plus
``cache_dir`` when its signature takes it. The wrapper options ``cache``, ``max_retries`` and
``retry_wait`` are taken out first and configure :class:`ManagedChatModel` / :class:`ManagedEmbedder`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hydra_vr.config import EmbeddingConfig, LLMConfig
from hydra_vr.llm.base import ChatModel, Embedder, LLMError
from hydra_vr.llm.wrapper import ManagedChatModel, ManagedEmbedder
from hydra_vr.registry import Registry

CHAT_BACKENDS: Registry[ChatModel] = Registry(
    "chat model",
    {
        "llama_cpp": "hydra_vr.llm.llama_cpp_backend:LlamaCppChat",
        "openai": "hydra_vr.llm.openai_backend:OpenAIChat",
        "scripted": "hydra_vr.llm.scripted:scripted_from_options",
    },
)

EMBEDDING_BACKENDS: Registry[Embedder] = Registry(
    "embedding",
    {
        "minilm": "hydra_vr.llm.minilm:MiniLMEmbedder",
        "openai": "hydra_vr.llm.openai_backend:OpenAIEmbedder",
    },
)

WRAPPER_OPTIONS = ("cache", "max_retries", "retry_wait")
# A fake's replies depend on call order, not only on the prompt: caching them would replay stale answers.
_UNCACHED_BY_DEFAULT = {"scripted"}


def _takes(factory: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _split(backend: str, options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    backend_opts = {k: v for k, v in options.items() if k not in WRAPPER_OPTIONS}
    wrapper_opts = {k: options[k] for k in WRAPPER_OPTIONS if k in options}
    wrapper_opts.setdefault("cache", backend not in _UNCACHED_BY_DEFAULT)
    return backend_opts, wrapper_opts


def _unknown_options(factory: Callable[..., Any], options: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(the options ``factory`` does not take, the ones it does), both empty where its signature says nothing."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return [], []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return [], []
    taken = [n for n, p in params.items() if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and n not in ("self", "cache_dir")]
    return sorted(k for k in options if k not in params), taken


def _create(registry: Registry[Any], backend: str, options: dict[str, Any], cache_dir: Path, section: str) -> Any:
    """``registry``'s ``backend`` built with ``options`` (the config's ``section``.options)."""
    factory = registry.factory(backend)
    if _takes(factory, "cache_dir"):
        options = {**options, "cache_dir": cache_dir}
    try:
        return factory(**options)
    except TypeError as exc:  # almost always an unknown or misspelt option
        unknown, taken = _unknown_options(factory, options)
        # A profile's options stay when --set changes only the backend: the old backend's then reach the new one.
        hint = (f"; it does not take {unknown} (it takes {taken}). Switching backends with --set keeps the profile's "
                f"options: use a profile written for this backend (--config NAME) or start from --set '{section}.options={{}}'"
                if unknown else "")
        raise LLMError(f"{registry.kind} backend {backend!r}: bad options {sorted(options)}: {exc}{hint}") from exc


def build_chat_model(cfg: LLMConfig, cache_dir: Path) -> ManagedChatModel:
    """The chat model a config names, wrapped with disk cache, retries and usage counting."""
    cache_dir = Path(cache_dir).expanduser()
    backend_opts, wrapper_opts = _split(cfg.backend, dict(cfg.options))
    inner = _create(CHAT_BACKENDS, cfg.backend, backend_opts, cache_dir, "llm")
    return ManagedChatModel(inner, cache_dir=cache_dir, **wrapper_opts)


def build_embedder(cfg: EmbeddingConfig, cache_dir: Path) -> ManagedEmbedder:
    """The embedder a config names, wrapped like chat models (cache on unless ``cache: false``)."""
    cache_dir = Path(cache_dir).expanduser()
    backend_opts, wrapper_opts = _split(cfg.backend, dict(cfg.options))
    inner = _create(EMBEDDING_BACKENDS, cfg.backend, backend_opts, cache_dir, "embedding")
    return ManagedEmbedder(inner, cache_dir=cache_dir, **wrapper_opts)
