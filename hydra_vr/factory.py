"""Build the runtime objects (toolbox, LLM, embedder) from a HydraConfig, lazily."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from hydra_vr.api.toolbox import VisionToolbox
from hydra_vr.config import HydraConfig

T = TypeVar("T")


def lazy(factory: Callable[[], T]) -> Callable[[], T]:
    """A provider that builds its object on first call and returns the same one afterwards."""
    lock = threading.Lock()
    box: list[T] = []

    def provider() -> T:
        with lock:
            if not box:
                box.append(factory())
            return box[0]

    return provider


def llm_provider(cfg: HydraConfig) -> Callable[[], Any]:
    def build() -> Any:
        from hydra_vr.llm import build_chat_model

        return build_chat_model(cfg.llm, cfg.cache_path)

    return lazy(build)


def embedder_provider(cfg: HydraConfig) -> Callable[[], Any]:
    def build() -> Any:
        from hydra_vr.llm import build_embedder

        return build_embedder(cfg.embedding, cfg.cache_path)

    return lazy(build)


def build_toolbox(cfg: HydraConfig, llm: Callable[[], Any] | None = None, embedder: Callable[[], Any] | None = None) -> VisionToolbox:
    """A toolbox whose LLM and embedder are built only if a tool needs them."""
    return VisionToolbox(
        cfg.vision,
        cache_dir=cfg.cache_path,
        llm=llm or llm_provider(cfg),
        embedder=embedder or embedder_provider(cfg),
    )
