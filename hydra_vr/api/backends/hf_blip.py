"""BLIP visual question answering and captioning (transformers)."""

from __future__ import annotations

from typing import Any

from PIL import Image

from hydra_vr.api.backends.hf_common import GenerativeVQA, clean_answer
from hydra_vr.api.tools import ToolContext
from hydra_vr.api.types import Answer


class BlipVQA(GenerativeVQA):
    """VisualQA over BlipForQuestionAnswering: greedy, short answers.

    Options: ``model`` (default Salesforce/blip-vqa-base), ``max_new_tokens`` (10), plus
    HubBackend's ``device``/``dtype``/``revision``/``local_files_only``.
    """

    default_model = "Salesforce/blip-vqa-base"
    source = "blip_vqa"
    model_class = "BlipForQuestionAnswering"

    def answer(self, image: Image.Image, question: str) -> Answer:
        text = self.generate_text(images=image.convert("RGB"), text=question)
        return Answer(text=clean_answer(text), source=self.source, evidence=f"{self.model_id}: {text!r}")


class BlipCaptioner(GenerativeVQA):
    """Captioner over BlipForConditionalGeneration.

    Options: ``model`` (default Salesforce/blip-image-captioning-base), ``prompt`` (optional text
    the caption continues, e.g. "a photography of"; kept in the caption), ``max_new_tokens`` (30).
    """

    default_model = "Salesforce/blip-image-captioning-base"
    source = "blip_caption"
    model_class = "BlipForConditionalGeneration"

    def __init__(
        self, ctx: ToolContext | None = None, *, prompt: str | None = None, max_new_tokens: int = 30, **kwargs: Any
    ) -> None:
        super().__init__(ctx, max_new_tokens=max_new_tokens, **kwargs)
        self.prompt = prompt

    def caption(self, image: Image.Image) -> str:
        args: dict[str, Any] = {"images": image.convert("RGB")}
        if self.prompt:
            args["text"] = self.prompt
        # BLIP's text decoder starts from its own BOS, so a prompt comes back inside the caption.
        return " ".join(self.generate_text(**args).split())
