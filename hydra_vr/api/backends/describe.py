"""simple_query / verify_property for the offline profile: an LLM answers from tool findings.

No VQA or image-text weights ship in any installable package, so this backend looks at the patch
with the tools that do exist (detector labels with scores and boxes, ImageNet labels, pixel
colours, OCR text, faces), writes them as a compact description, and asks the configured LLM to
answer from it. It is honest about what it is: a language model reasoning over tool outputs, not
a model that sees pixels. Hub users swap in BLIP / BLIP-2 / LLaVA by config.
"""

from __future__ import annotations

import logging
import re

from PIL import Image

from hydra_vr.api import colors as color_ops
from hydra_vr.api.tools import ToolContext
from hydra_vr.api.types import Answer
from hydra_vr.prompts import render_prompt

log = logging.getLogger(__name__)

_TEXT_QUESTION = re.compile(r"\b(text|written|write|say|says|read|word|words|letter|sign|number|brand|name|title|label|logo)\b", re.I)
_PEOPLE_QUESTION = re.compile(r"\b(face|faces|person|people|man|woman|boy|girl|child|who)\b", re.I)


class DescribeVQA:
    """Options: max_objects, classifier_top_k, ocr ("auto": only for questions about text, "always", "never")."""

    def __init__(self, ctx: ToolContext, *, max_objects: int = 12, classifier_top_k: int = 3, ocr: str = "auto", max_tokens: int = 16) -> None:
        if ocr not in {"auto", "always", "never"}:
            raise ValueError("describe: ocr must be 'auto', 'always' or 'never'")
        self.ctx = ctx
        self.max_objects = max_objects
        self.classifier_top_k = classifier_top_k
        self.ocr = ocr
        self.max_tokens = max_tokens

    def describe(self, image: Image.Image, question: str) -> dict:
        """The findings the LLM sees, as template variables (also returned as evidence)."""
        tb = self.ctx.toolbox
        if tb is None:
            raise RuntimeError("describe backend needs a toolbox in its context")
        detector = tb.backend("detector")
        if hasattr(detector, "detect_classes"):
            dets = detector.detect_classes(image)
        else:  # open-vocabulary detectors need names: ask for the ones the question mentions
            dets = detector.detect(image, re.findall(r"[a-z]+", question.lower()))
        objects = [{"label": d.label, "score": d.score, "box": [int(v) for v in d.box.to_list(0)]} for d in dets[: self.max_objects]]
        labels = []
        if tb.has("classifier"):
            labels = [f"{ls.label} ({ls.score:.2f})" for ls in tb.backend("classifier").classify([image], top_k=self.classifier_top_k)[0]]
        colors = [f"{c.name} {c.fraction:.0%}" for c in color_ops.dominant_colors(image) if c.fraction >= 0.05]
        texts = None
        if tb.has("ocr") and (self.ocr == "always" or (self.ocr == "auto" and _TEXT_QUESTION.search(question))):
            texts = [r.text for r in tb.backend("ocr").read_text(image)]
        faces = None
        if tb.has("faces") and _PEOPLE_QUESTION.search(question):
            faces = len(tb.backend("faces").detect_faces(image))
        return {"width": image.width, "height": image.height, "objects": objects, "labels": labels,
                "colors": colors, "texts": texts, "faces": faces, "question": question}

    def answer(self, image: Image.Image, question: str) -> Answer:
        if self.ctx.llm is None:
            raise RuntimeError("the 'describe' VQA backend needs an LLM; configure llm in the config or choose a VQA model")
        from hydra_vr.llm.base import ChatMessage

        findings = self.describe(image, question)
        user = render_prompt("vqa_describe_user", **findings)
        res = self.ctx.llm().chat(
            [ChatMessage("system", render_prompt("vqa_describe_system")), ChatMessage("user", user)],
            max_tokens=self.max_tokens,
        )
        text = res.text.strip().splitlines()[0].strip().strip(".").lower() if res.text.strip() else ""
        return Answer(text=text, source="describe", evidence=user)
