"""The controller's observation: text embeddings of the query, the memory and each option slot.

Layout of the vector (``D`` = embedding dimension, ``N`` = option slots), every value in [-1, 1]::

    [ e(query) | e(memory) | e(option_1) ... e(option_N) | p_1 ... p_N | mask_1 ... mask_N | step, replans, can_replan ]
       D          D           N * D                          N             N                   3

- ``e(.)`` are the embedder's L2-normalised rows; an empty slot (fewer than N options) is zeros
  with mask 0 and probability 0, so the policy can tell it apart and inference masks it.
- ``e(memory)`` embeds the newest ``memory_chars`` of the rendered state memory (MiniLM reads
  256 word pieces: the head of a long memory would otherwise push the latest step out).
- ``step = min(t, 10) / 10``, ``replans = min(r, 10) / 10``, ``can_replan`` = 1 while r < max_replans.

The paper embeds one prompt holding all of this; embedding each slot separately keeps which text
is in which action slot visible to the Q-network (one pooled vector of 5 options is not) and
lets replay rebuild observations from stored vectors without the embedder.
Dimension: ``(N + 2) * D + 2N + 3``: 2701 for MiniLM (384) with N = 5, 10765 for 1536-d.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

STEP_SCALE = 10
EXTRA_FEATURES = 3


def observation_dim(embedding_dim: int, num_options: int) -> int:
    return (num_options + 2) * embedding_dim + 2 * num_options + EXTRA_FEATURES


def valid_action_mask(obs: Any, num_options: int) -> Any:
    """Valid actions (N option slots, then REPLAN) read from a batch of observations (numpy or torch)."""
    slots = obs[..., -EXTRA_FEATURES - num_options:-EXTRA_FEATURES] > 0.5
    can_replan = obs[..., -1:] > 0.5
    if isinstance(slots, np.ndarray):
        return np.concatenate([slots, can_replan], axis=-1)
    import torch

    return torch.cat([slots, can_replan], dim=-1)


def memory_tail(memory_text: str, memory_chars: int) -> str:
    return memory_text if len(memory_text) <= memory_chars else memory_text[-memory_chars:]


@dataclass
class ObservationParts:
    """The embedded texts of one decision; probabilities and counters are added by :func:`assemble`."""

    query_vec: np.ndarray  # (D,)
    memory_vec: np.ndarray  # (D,)
    option_vecs: np.ndarray  # (n, D), n <= N


def assemble(parts: ObservationParts, probabilities: Sequence[float], num_options: int, *, step: int,
             replans: int, max_replans: int) -> np.ndarray:
    """The flat float32 observation (see the module docstring); options past N are dropped."""
    dim = parts.query_vec.shape[0]
    n = min(len(parts.option_vecs), num_options)
    slots = np.zeros((num_options, dim), dtype=np.float32)
    slots[:n] = parts.option_vecs[:n]
    probs = np.zeros(num_options, dtype=np.float32)
    probs[:n] = np.clip(np.asarray(list(probabilities)[:n], dtype=np.float32), 0.0, 1.0)
    mask = np.zeros(num_options, dtype=np.float32)
    mask[:n] = 1.0
    extra = np.array([min(step, STEP_SCALE) / STEP_SCALE, min(replans, STEP_SCALE) / STEP_SCALE,
                      float(replans < max_replans)], dtype=np.float32)
    obs = np.concatenate([parts.query_vec.astype(np.float32), parts.memory_vec.astype(np.float32), slots.ravel(), probs, mask, extra])
    return np.clip(obs, -1.0, 1.0)


class ObservationEncoder:
    """Embeds a decision's texts with an :class:`~hydra_vr.llm.base.Embedder` (``embed``, ``dim``, ``name``)."""

    def __init__(self, embedder: Any, num_options: int, memory_chars: int = 1000) -> None:
        self.embedder = embedder
        self.num_options = num_options
        self.memory_chars = memory_chars

    @property
    def embedding_dim(self) -> int:
        return int(self.embedder.dim)

    @property
    def embedding_name(self) -> str:
        return str(self.embedder.name)

    @property
    def dim(self) -> int:
        return observation_dim(self.embedding_dim, self.num_options)

    def embed_texts(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Each distinct text embedded once (an empty text is the zero vector)."""
        unique = sorted({t for t in texts if t})
        rows = self.embedder.embed(unique) if unique else np.zeros((0, self.embedding_dim), dtype=np.float32)
        table = {t: np.asarray(r, dtype=np.float32) for t, r in zip(unique, rows)}
        table[""] = np.zeros(self.embedding_dim, dtype=np.float32)
        return table

    def parts(self, query: str, memory_text: str, options: Sequence[str]) -> ObservationParts:
        memory = memory_tail(memory_text, self.memory_chars)
        table = self.embed_texts([query, memory, *options])
        vecs = np.stack([table[o] for o in options]) if options else np.zeros((0, self.embedding_dim), dtype=np.float32)
        return ObservationParts(table[query], table[memory], vecs)

    def encode(self, query: str, memory_text: str, options: Sequence[str], probabilities: Sequence[float], *,
               step: int, replans: int, max_replans: int) -> np.ndarray:
        return assemble(self.parts(query, memory_text, options), probabilities, self.num_options,
                        step=step, replans=replans, max_replans=max_replans)
