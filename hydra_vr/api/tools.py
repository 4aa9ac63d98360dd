"""Vision tool protocols and the one registry that maps config names to backends.

Every backend factory is called as ``Factory(ctx, **options)`` where ``ctx`` is a ToolContext and
``options`` come from the YAML config. A backend implements one or more of the protocols below;
the toolbox checks the protocol of the role it fills when the backend is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
from PIL import Image

from hydra_vr.api.types import Answer, Detection, LabelScore, TextRegion
from hydra_vr.registry import Registry

if TYPE_CHECKING:
    from hydra_vr.api.toolbox import VisionToolbox
    from hydra_vr.llm.base import ChatModel, Embedder


@dataclass
class ToolContext:
    """What a backend may need besides its own options; providers are lazy."""

    device: str = "cpu"
    cache_dir: Path = field(default_factory=lambda: Path("~/.cache/hydra-vr").expanduser())
    llm: Callable[[], ChatModel] | None = None
    embedder: Callable[[], Embedder] | None = None
    toolbox: VisionToolbox | None = None  # for composite backends (describe)
    # A question's frame (hydra_vr.question.parse, wired by hydra_vr.factory), whose fields (the category asked
    # for, the place or focus asked about) api reads: api takes explicit inputs and never parses questions.
    read_question: Callable[[str], Any] | None = None

    def torch_device(self) -> str:
        if self.device != "auto":
            return self.device
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"


@runtime_checkable
class Detector(Protocol):
    def detect(self, image: Image.Image, queries: Sequence[str]) -> list[Detection]:
        """Boxes for each query name, in ``image`` pixels, best first; ``Detection.query`` says which."""
        ...


@runtime_checkable
class LikeliestDetector(Protocol):
    """A detector that can name its likeliest box for a query below its own confidence threshold: for a thing
    known to be in the photo (a referring expression names it) that no detection clears the threshold for."""

    def likeliest(self, image: Image.Image, queries: Sequence[str]) -> list[Detection]: ...


@runtime_checkable
class FaceDetector(Protocol):
    def detect_faces(self, image: Image.Image) -> list[Detection]: ...


@runtime_checkable
class TextReader(Protocol):
    def read_text(self, image: Image.Image) -> list[TextRegion]: ...


@runtime_checkable
class Classifier(Protocol):
    def classify(self, images: Sequence[Image.Image], top_k: int = 5) -> list[list[LabelScore]]: ...


@runtime_checkable
class Localizer(Protocol):
    """A classifier that can also say where it sees the classes a name means (``find`` for non-detector names)."""

    def map_name(self, name: str) -> tuple[str, ...]: ...

    def localize(self, image: Image.Image, name: str) -> list[Detection]: ...


@runtime_checkable
class DepthEstimator(Protocol):
    def depth_map(self, image: Image.Image) -> np.ndarray:
        """Relative depth, HxW float32, larger = farther from the camera."""
        ...


@runtime_checkable
class VisualQA(Protocol):
    def answer(self, image: Image.Image, question: str) -> Answer: ...


@runtime_checkable
class ImageTextMatcher(Protocol):
    def match(self, images: Sequence[Image.Image], texts: Sequence[str]) -> np.ndarray:
        """Scores of shape (len(images), len(texts)); higher = better match."""
        ...


@runtime_checkable
class Captioner(Protocol):
    def caption(self, image: Image.Image) -> str: ...


def search_settles(found: int, meta: Mapping[str, Any]) -> bool:
    """True when a find() (``found`` patches, ``meta`` as ``VisionToolbox.look_for`` reports it) is evidence
    about the scene: something found, or nothing found by a search over every pixel (``measured``:
    outlines, colour regions). A detector's miss or a name no tool can look for (``unsearchable``) is
    not: NanoDet misses small boats."""
    return not meta.get("unsearchable") and (found > 0 or bool(meta.get("measured")))


def default_vision_registry() -> Registry:
    """A fresh registry with the built-in backends (callers may register more)."""
    b = "hydra_vr.api.backends"
    return Registry(
        "vision tool",
        {
            # embedded, offline profile
            "nanodet": f"{b}.nanodet:NanoDetDetector",
            "opencv_faces": f"{b}.faces:OpenCVFaceDetector",
            "mediapipe_faces": f"{b}.faces:MediaPipeFaceDetector",
            "rapidocr": f"{b}.ocr:RapidOCRReader",
            "efficientnet_lite": f"{b}.efficientnet:EfficientNetLiteClassifier",
            "heuristic_depth": f"{b}.depth_heuristic:HeuristicDepth",
            "describe": f"{b}.describe:DescribeVQA",
            # hub profile (transformers; weights from a model hub or a local directory)
            "owlv2": f"{b}.hf_owl:OwlDetector",
            "owlvit": f"{b}.hf_owl:OwlDetector",
            "grounding_dino": f"{b}.hf_grounding_dino:GroundingDinoDetector",
            "blip_vqa": f"{b}.hf_blip:BlipVQA",
            "blip_caption": f"{b}.hf_blip:BlipCaptioner",
            "blip2": f"{b}.hf_blip2:Blip2VQA",
            "llava": f"{b}.hf_llava:LlavaVQA",
            "clip": f"{b}.hf_clip:ClipMatcher",
            "siglip": f"{b}.hf_clip:ClipMatcher",
            "dpt": f"{b}.hf_depth:HFDepthEstimator",
            "depth_anything": f"{b}.hf_depth:HFDepthEstimator",
        },
    )
