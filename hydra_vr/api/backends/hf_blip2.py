"""BLIP-2 visual question answering and captioning (transformers, OPT or Flan-T5 language models)."""

from __future__ import annotations

from typing import Any

from PIL import Image

from hydra_vr.api.backends.hf_common import GenerativeVQA, clean_answer
from hydra_vr.api.tools import ToolContext
from hydra_vr.api.types import Answer

# The prompt format of the BLIP-2 paper's zero-shot VQA evaluation.
DEFAULT_PROMPT = "Question: {question} Short answer:"


class Blip2VQA(GenerativeVQA):
    """VisualQA and Captioner over Blip2ForConditionalGeneration.

    Options: ``model`` (default Salesforce/blip2-flan-t5-xl), ``prompt`` (template with
    ``{question}``, default "Question: {question} Short answer:"), ``max_new_tokens`` (10),
    ``caption_prompt`` ("a photo of", the BLIP-2 captioning prompt; decoder-only models echo it
    and it is cut off), ``caption_max_new_tokens`` (30), plus HubBackend's ``device``/``dtype``/
    ``revision``/``local_files_only``.
    """

    default_model = "Salesforce/blip2-flan-t5-xl"
    source = "blip2"
    model_class = "Blip2ForConditionalGeneration"

    def __init__(
        self,
        ctx: ToolContext | None = None,
        *,
        prompt: str = DEFAULT_PROMPT,
        caption_prompt: str = "a photo of",
        caption_max_new_tokens: int = 30,
        **kwargs: Any,
    ) -> None:
        super().__init__(ctx, **kwargs)
        if "{question}" not in prompt:
            raise ValueError("blip2 prompt must contain {question}")
        self.prompt = prompt
        self.caption_prompt = caption_prompt
        self.caption_max_new_tokens = caption_max_new_tokens

    def answer(self, image: Image.Image, question: str) -> Answer:
        text = self.generate_text(images=image.convert("RGB"), text=self.prompt.format(question=question.strip()))
        return Answer(text=clean_answer(text), source=self.source, evidence=f"{self.model_id}: {text!r}")

    def caption(self, image: Image.Image) -> str:
        # Always some text: without any, BLIP-2 starts T5 decoding from a BOS id T5 configs lack.
        text = self.generate_text(self.caption_max_new_tokens, images=image.convert("RGB"), text=self.caption_prompt)
        return clean_answer(text)
