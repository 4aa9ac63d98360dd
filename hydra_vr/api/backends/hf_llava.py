"""LLaVA visual question answering and captioning (transformers image-text-to-text models)."""

from __future__ import annotations

from typing import Any

from PIL import Image

from hydra_vr.api.backends.hf_common import GenerativeVQA, clean_answer
from hydra_vr.api.tools import ToolContext
from hydra_vr.api.types import Answer

# LLaVA-1.5's prompt when no chat template ships with the processor/tokenizer.
FALLBACK_PROMPT = "USER: <image>\n{question} ASSISTANT:"
# LLaVA-1.5 was tuned on VQA data with this suffix; it keeps answers to a word or phrase.
SHORT_ANSWER = "Answer the question using a single word or phrase."


class LlavaVQA(GenerativeVQA):
    """VisualQA and Captioner over LLaVA (``AutoModelForImageTextToText``, greedy decoding).

    The prompt comes from the processor's chat template (one user turn: the image, then the
    question) when the processor or its tokenizer has one, else ``"USER: <image>\\n{question} ASSISTANT:"``.
    Options: ``model`` (default llava-hf/llava-1.5-7b-hf), ``max_new_tokens`` (10),
    ``short_answer_suffix`` (appended to questions; "" to drop), ``caption_question`` and
    ``caption_max_new_tokens`` (40) for ``caption``, plus HubBackend's ``device``/``dtype``/
    ``revision``/``local_files_only``.
    """

    default_model = "llava-hf/llava-1.5-7b-hf"
    source = "llava"
    model_class = "AutoModelForImageTextToText"

    def __init__(
        self,
        ctx: ToolContext | None = None,
        *,
        short_answer_suffix: str = SHORT_ANSWER,
        caption_question: str = "Describe the image in one sentence.",
        caption_max_new_tokens: int = 40,
        **kwargs: Any,
    ) -> None:
        super().__init__(ctx, **kwargs)
        self.short_answer_suffix = short_answer_suffix
        self.caption_question = caption_question
        self.caption_max_new_tokens = caption_max_new_tokens

    def prompt(self, question: str) -> str:
        """The text given to the processor for one image and ``question``."""
        proc = self.processor
        if getattr(proc, "chat_template", None) or getattr(proc.tokenizer, "chat_template", None):
            conversation = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
            return proc.apply_chat_template(conversation, add_generation_prompt=True)
        return FALLBACK_PROMPT.format(question=question)

    def answer(self, image: Image.Image, question: str) -> Answer:
        q = question.strip()
        if self.short_answer_suffix:
            q = f"{q} {self.short_answer_suffix}"
        text = self.generate_text(images=image.convert("RGB"), text=self.prompt(q))
        return Answer(text=clean_answer(text), source=self.source, evidence=f"{self.model_id}: {text!r}")

    def caption(self, image: Image.Image) -> str:
        prompt = self.prompt(self.caption_question)
        text = self.generate_text(self.caption_max_new_tokens, images=image.convert("RGB"), text=prompt)
        return " ".join(text.split())
