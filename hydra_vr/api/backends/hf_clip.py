"""CLIP / SigLIP image-text matching (transformers dual encoders), batched.

Config names ``clip`` and ``siglip`` both build :class:`ClipMatcher`; the loaded config decides
how scores are made. CLIP: cosine similarity of the normalised embeddings (``scores: cosine``,
default, in [-1, 1]: a pair's score does not depend on the other texts asked) or a softmax over
the texts per image (``scores: softmax``, rows sum to 1). SigLIP: its trained sigmoid
``sigmoid(scale * cosine + bias)``, a per-pair probability in (0, 1). Higher = better always.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from PIL import Image

from hydra_vr.api.backends.hf_common import HubBackend
from hydra_vr.api.tools import ToolContext

_SIGMOID_FAMILIES = ("siglip", "siglip2")


class ClipMatcher(HubBackend):
    """ImageTextMatcher over CLIP-like models: ``match(images, texts) -> (n_images, n_texts)``.

    Options: ``model`` (default openai/clip-vit-base-patch32; e.g. google/siglip-base-patch16-224),
    ``scores`` ("cosine" or "softmax"; CLIP only), ``batch_size`` (images or texts per forward, 32),
    plus HubBackend's ``device``/``dtype``/``revision``/``local_files_only``.
    """

    default_model = "openai/clip-vit-base-patch32"
    source = "clip"
    model_class = "AutoModel"

    def __init__(
        self,
        ctx: ToolContext | None = None,
        *,
        scores: Literal["cosine", "softmax"] = "cosine",
        batch_size: int = 32,
        **kwargs: Any,
    ) -> None:
        super().__init__(ctx, **kwargs)
        if scores not in ("cosine", "softmax"):
            raise ValueError(f"scores must be 'cosine' or 'softmax', got {scores!r}")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.scores = scores
        self.batch_size = batch_size

    def _after_load(self) -> None:
        self.sigmoid = self._model.config.model_type in _SIGMOID_FAMILIES
        self.source = "siglip" if self.sigmoid else "clip"

    def match(self, images: Sequence[Image.Image], texts: Sequence[str]) -> np.ndarray:
        import torch

        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, not one string")
        if not images or not texts:
            return np.zeros((len(images), len(texts)), dtype=np.float32)
        self.load()
        with torch.inference_mode():
            img = self._embed("image", [im.convert("RGB") for im in images])
            txt = self._embed("text", list(texts))
            cos = img @ txt.T
            scale = self._model.logit_scale.float().exp()
            if self.sigmoid:
                # SigLIP was trained with a per-pair sigmoid over scaled cosine plus a learned bias.
                out = torch.sigmoid(cos * scale + self._model.logit_bias.float())
            elif self.scores == "softmax":
                out = torch.softmax(cos * scale, dim=1)
            else:
                out = cos
        return out.cpu().numpy().astype(np.float32)

    def _embed(self, kind: str, items: list[Any]) -> Any:
        """L2-normalised float32 embeddings, ``batch_size`` items per forward pass (caller holds inference_mode)."""
        import torch

        feats = []
        for i in range(0, len(items), self.batch_size):
            chunk = items[i : i + self.batch_size]
            if kind == "image":
                out = self._model.get_image_features(**self.inputs(images=chunk))
            else:
                # SigLIP was trained on max_length padding; CLIP pools at the end token either way.
                padding = "max_length" if self.sigmoid else True
                out = self._model.get_text_features(**self.inputs(text=chunk, padding=padding, truncation=True))
            # transformers 5 returns a model output whose pooler_output is the projected embedding.
            out = getattr(out, "pooler_output", out)
            feats.append(torch.nn.functional.normalize(out.float(), dim=-1))
        return torch.cat(feats)
