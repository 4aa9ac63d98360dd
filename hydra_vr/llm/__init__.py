"""LLM layer: chat and embedding protocols, backends chosen by config name."""

from hydra_vr.llm.base import ChatMessage, ChatModel, ChatResult, Embedder, LLMError

__all__ = ["ChatMessage", "ChatModel", "ChatResult", "Embedder", "LLMError"]
