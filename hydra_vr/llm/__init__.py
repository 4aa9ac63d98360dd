"""LLM layer: chat and embedding protocols, backends chosen by config name.

``build_chat_model(cfg.llm, cfg.cache_path)`` / ``build_embedder(cfg.embedding, cfg.cache_path)``
give a backend wrapped with a disk cache, retries and a ``usage`` counter. Backends are imported
only when built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hydra_vr.llm.base import ChatMessage, ChatModel, ChatResult, Embedder, LLMError

if TYPE_CHECKING:
    from hydra_vr.llm.factory import CHAT_BACKENDS, EMBEDDING_BACKENDS, build_chat_model, build_embedder
    from hydra_vr.llm.scripted import ScriptedChat
    from hydra_vr.llm.wrapper import ManagedChatModel, ManagedEmbedder, TransientLLMError, Usage

_LAZY = {
    "CHAT_BACKENDS": "hydra_vr.llm.factory",
    "EMBEDDING_BACKENDS": "hydra_vr.llm.factory",
    "build_chat_model": "hydra_vr.llm.factory",
    "build_embedder": "hydra_vr.llm.factory",
    "ScriptedChat": "hydra_vr.llm.scripted",
    "ManagedChatModel": "hydra_vr.llm.wrapper",
    "ManagedEmbedder": "hydra_vr.llm.wrapper",
    "TransientLLMError": "hydra_vr.llm.wrapper",
    "Usage": "hydra_vr.llm.wrapper",
}


def __getattr__(name: str) -> Any:
    # Lazy so `import hydra_vr.llm` stays cheap (factory pulls in config/pydantic).
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hydra_vr.llm' has no attribute {name!r}")


__all__ = [
    "CHAT_BACKENDS",
    "EMBEDDING_BACKENDS",
    "ChatMessage",
    "ChatModel",
    "ChatResult",
    "Embedder",
    "LLMError",
    "ManagedChatModel",
    "ManagedEmbedder",
    "ScriptedChat",
    "TransientLLMError",
    "Usage",
    "build_chat_model",
    "build_embedder",
]
