"""Hub-profile backends on tiny random-weight transformers models saved to disk (no download).

The models are random, so tests check types and invariants (boxes inside the image, score
ranges, shapes, prompt handling, one forward pass per call), never what the models "see".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image
from skimage import data

from hydra_vr.api.backends.hf_common import ModelLoadError, resolve_dtype
from hydra_vr.api.toolbox import ToolUnavailableError, VisionToolbox
from hydra_vr.api.tools import (
    Captioner,
    DepthEstimator,
    Detector,
    ImageTextMatcher,
    ToolContext,
    VisualQA,
    default_vision_registry,
)
from hydra_vr.api.types import Answer, Box, Detection
from hydra_vr.config import ComponentConfig, VisionConfig, load_config

import hub_tiny  # tests/ is on sys.path (rootdir conftest, no package)

QUERIES = ["a cup", "a saucer", "coffee"]
Tiny = Callable[[str], Path]  # the `tiny` fixture: name -> saved model directory


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """tiny("owlv2") -> directory of that tiny model + processor, built once per module."""
    root = tmp_path_factory.mktemp("hub_tiny")
    built: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in built:
            built[name] = hub_tiny.BUILDERS[name](root / name)
        return built[name]

    return get


@pytest.fixture(scope="module")
def coffee() -> Image.Image:
    return Image.fromarray(data.coffee())  # 600x400: not square, so padding mistakes show


@pytest.fixture(scope="module")
def astronaut() -> Image.Image:
    return Image.fromarray(data.astronaut()).resize((96, 128))


def make(name: str, model_dir: Path, **options: Any) -> Any:
    """Build ``name`` exactly as the toolbox does, with the tiny directory as the model id."""
    return default_vision_registry().create(name, ctx=ToolContext(device="cpu"), model=str(model_dir), **options)


def count_forwards(module: torch.nn.Module) -> list[int]:
    calls = [0]
    module.register_forward_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    return calls


def assert_valid_detections(dets: list[Detection], image: Image.Image, source: str, queries: list[str]) -> None:
    w, h = image.size
    assert dets and all(isinstance(d, Detection) for d in dets)
    for d in dets:
        b = d.box
        assert 0 <= b.x1 <= b.x2 <= w and 0 <= b.y1 <= b.y2 <= h, b
        assert 0.0 <= d.score <= 1.0 and math.isfinite(d.score)
        assert d.query in queries and d.label == d.query
        assert d.source == source
    scores = [d.score for d in dets]
    assert scores == sorted(scores, reverse=True)


# ------------------------------------------------------------------ detectors
@pytest.mark.parametrize("name", ["owlv2", "owlvit", "grounding_dino"])
def test_detector_boxes_in_image_pixels_one_forward_per_call(name: str, tiny: Tiny, coffee: Image.Image) -> None:
    det = make(name, tiny(name), threshold=0.0, nms_iou=1.0)
    assert isinstance(det, Detector) and not det.loaded
    forwards = count_forwards(det.model)
    dets = det.detect(coffee, QUERIES)
    assert forwards[0] == 1  # every query of the call in one pass
    assert_valid_detections(dets, coffee, name, QUERIES)
    assert det.detect(coffee, ["", "  "]) == []
    limited = make(name, tiny(name), threshold=0.0, max_detections=3).detect(coffee, QUERIES)
    assert 0 < len(limited) <= 3


def test_owlv2_scales_boxes_by_the_padded_square(tiny: Tiny, coffee: Image.Image) -> None:
    """OWLv2 pads to a square first: normalised boxes are fractions of max(W, H), not of W and H."""
    det = make("owlv2", tiny("owlv2"), threshold=0.0, nms_iou=1.0, max_detections=1000)
    dets = det.detect(coffee, QUERIES)
    inputs = det.inputs(text=[QUERIES], images=coffee, truncation=True)
    with torch.inference_mode():
        out = det.model(**inputs)
    cx, cy, bw, bh = out.pred_boxes[0].unbind(-1)
    side = max(coffee.size)
    w, h = coffee.size
    x1, y1, x2, y2 = ((cx - bw / 2) * side, (cy - bh / 2) * side, (cx + bw / 2) * side, (cy + bh / 2) * side)
    expected = torch.stack([x1.clamp(0, w), y1.clamp(0, h), x2.clamp(0, w), y2.clamp(0, h)], -1)
    scores = out.logits[0].sigmoid().max(-1).values
    order = torch.argsort(scores, descending=True)
    assert len(dets) == len(order)
    got = torch.tensor([d.box.to_list(None) for d in dets])
    torch.testing.assert_close(got, expected[order], atol=1e-3, rtol=1e-4)


def test_nms_drops_overlapping_boxes_of_the_same_query(tiny: Tiny, coffee: Image.Image) -> None:
    det = make("grounding_dino", tiny("grounding_dino"), threshold=0.0, nms_iou=0.1)
    dets = det.detect(coffee, QUERIES)
    for i, a in enumerate(dets):
        for b in dets[i + 1 :]:
            if a.query == b.query:
                assert a.box.iou(b.box) <= 0.1 + 1e-6


def test_grounding_dino_prompt_spans_name_each_query() -> None:
    from hydra_vr.api.backends.hf_grounding_dino import GroundingDinoDetector

    text, spans = GroundingDinoDetector.prompt(["A Cat", "dog.house", "red  car"])
    assert text == "a cat. dog house. red car."
    assert [text[s:e] for s, e in spans] == ["a cat", "dog house", "red car"]


# ------------------------------------------------------------------------ VQA
VQA_CASES = [("blip_vqa", "blip_vqa"), ("blip2", "blip2"), ("blip2", "blip2_t5"), ("llava", "llava")]


@pytest.mark.parametrize(("name", "tiny_name"), VQA_CASES)
def test_vqa_returns_a_short_deterministic_answer(
    name: str, tiny_name: str, tiny: Tiny, astronaut: Image.Image
) -> None:
    vqa = make(name, tiny(tiny_name), max_new_tokens=4)
    assert isinstance(vqa, VisualQA)
    question = "what is the person holding?"
    ans = vqa.answer(astronaut, question)
    assert isinstance(ans, Answer) and isinstance(ans.text, str) and ans.source == name
    assert "\n" not in ans.text and question not in ans.text
    assert vqa.answer(astronaut, question) == ans  # greedy decoding


@pytest.mark.parametrize("tiny_name", ["blip2", "llava"])
def test_decoder_only_answers_hold_only_new_tokens(tiny_name: str, tiny: Tiny, astronaut: Image.Image) -> None:
    """These tiny LMs have no end token, so they always generate; the echoed prompt must be cut off."""
    name = "blip2" if tiny_name == "blip2" else "llava"
    vqa = make(name, tiny(tiny_name), max_new_tokens=3)
    ans = vqa.answer(astronaut, "what color is the flag?")
    assert ans.text
    assert "question" not in ans.text.lower() and "assistant" not in ans.text.lower() and "flag" not in ans.text
    long = make(name, tiny(tiny_name), max_new_tokens=12).answer(astronaut, "what color is the flag?")
    assert len(long.text) > len(ans.text)


def test_llava_prompt_uses_chat_template_else_documented_fallback(tiny: Tiny, tmp_path: Path) -> None:
    from hydra_vr.api.backends.hf_llava import FALLBACK_PROMPT

    templated = make("llava", tiny("llava")).prompt("is it red?")
    assert templated.startswith("USER: <image>\n") and templated.endswith("ASSISTANT:") and "is it red?" in templated
    plain_dir = hub_tiny.build_llava(tmp_path / "llava_plain", chat_template=False)
    plain = make("llava", plain_dir)
    assert plain.processor.chat_template is None
    expected = "USER: <image>\nis it red? ASSISTANT:"
    assert plain.prompt("is it red?") == FALLBACK_PROMPT.format(question="is it red?") == expected


CAPTION_CASES = [("blip_caption", "blip_caption"), ("blip2", "blip2"), ("llava", "llava")]


@pytest.mark.parametrize(("name", "tiny_name"), CAPTION_CASES)
def test_captioners_return_text(name: str, tiny_name: str, tiny: Tiny, astronaut: Image.Image) -> None:
    limit = {"max_new_tokens": 4} if name == "blip_caption" else {"caption_max_new_tokens": 4}
    cap = make(name, tiny(tiny_name), **limit)
    assert isinstance(cap, Captioner)
    text = cap.caption(astronaut)
    assert isinstance(text, str) and "\n" not in text


# ------------------------------------------------------------------- matchers
TEXTS = ["a cup of coffee", "an astronaut", "a red flag"]


@pytest.mark.parametrize(("name", "scores"), [("clip", "cosine"), ("clip", "softmax"), ("siglip", "cosine")])
def test_matcher_shape_range_and_batching(
    name: str, scores: str, tiny: Tiny, coffee: Image.Image, astronaut: Image.Image
) -> None:
    m = make(name, tiny(name), scores=scores, batch_size=32)
    assert isinstance(m, ImageTextMatcher)
    s = m.match([coffee, astronaut], TEXTS)
    assert isinstance(s, np.ndarray) and s.shape == (2, 3) and s.dtype == np.float32 and np.isfinite(s).all()
    if name == "siglip":
        assert ((s > 0) & (s < 1)).all()  # per-pair sigmoid
    elif scores == "softmax":
        np.testing.assert_allclose(s.sum(axis=1), 1.0, rtol=1e-5)
    else:
        assert (np.abs(s) <= 1 + 1e-5).all()
    one_by_one = make(name, tiny(name), scores=scores, batch_size=1).match([coffee, astronaut], TEXTS)
    np.testing.assert_allclose(one_by_one, s, rtol=1e-4, atol=1e-5)
    assert m.match([], TEXTS).shape == (0, 3)


@pytest.mark.parametrize("name", ["clip", "siglip"])
def test_pair_scores_do_not_depend_on_the_other_texts(name: str, tiny: Tiny, coffee: Image.Image) -> None:
    m = make(name, tiny(name))
    full = m.match([coffee], TEXTS)
    alone = m.match([coffee], TEXTS[1:2])
    np.testing.assert_allclose(alone[0, 0], full[0, 1], rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------- depth
@pytest.mark.parametrize("name", ["dpt", "depth_anything"])
def test_depth_map_at_image_size_finite(name: str, tiny: Tiny, coffee: Image.Image) -> None:
    est = make(name, tiny(name))
    assert isinstance(est, DepthEstimator)
    d = est.depth_map(coffee)
    assert d.shape == (coffee.height, coffee.width) and d.dtype == np.float32 and np.isfinite(d).all()
    assert d.min() >= 1.0 - 1e-5 and d.max() <= 1 / 0.01 + 1e-3  # reciprocal of disparity in [eps, 1]
    lin = make(name, tiny(name), conversion="linear").depth_map(coffee)
    assert lin.shape == d.shape and lin.min() == pytest.approx(0.0, abs=1e-5)
    # both conversions order pixels the same way (larger = farther)
    flat_d, flat_l = d.ravel()[::97], lin.ravel()[::97]
    assert (np.sign(np.subtract.outer(flat_d, flat_d)) == np.sign(np.subtract.outer(flat_l, flat_l))).mean() > 0.99


def test_disparity_to_depth_makes_near_small_and_far_large() -> None:
    from hydra_vr.api.backends.hf_depth import disparity_to_depth

    disp = np.array([[10.0, 5.0], [1.0, 0.0]], dtype=np.float32)  # disparity: large = near
    for conv in ("reciprocal", "linear"):
        depth = disparity_to_depth(disp, conv, eps=0.1)
        assert depth.dtype == np.float32
        assert depth[0, 0] < depth[0, 1] < depth[1, 0] < depth[1, 1]
    rec = disparity_to_depth(disp, "reciprocal", eps=0.1)
    assert rec[0, 0] == pytest.approx(1.0) and rec[1, 1] == pytest.approx(10.0)
    assert (disparity_to_depth(np.full((3, 4), 7.0), "reciprocal") == 1.0).all()


# ------------------------------------------------------------ through toolbox
TOOLBOX_CASES = [
    ("detector", "owlv2", "owlv2", {"threshold": 0.0}),
    ("detector", "grounding_dino", "grounding_dino", {"threshold": 0.0}),
    ("vqa", "blip_vqa", "blip_vqa", {}),
    ("vqa", "blip2", "blip2_t5", {}),
    ("vqa", "llava", "llava", {"max_new_tokens": 3}),
    ("matcher", "clip", "clip", {}),
    ("matcher", "siglip", "siglip", {}),
    ("depth", "dpt", "dpt", {}),
    ("depth", "depth_anything", "depth_anything", {}),
    ("captioner", "blip_caption", "blip_caption", {"max_new_tokens": 5}),
]


@pytest.mark.parametrize(("role", "name", "tiny_name", "options"), TOOLBOX_CASES)
def test_toolbox_role_served_by_hub_backend(
    role: str,
    name: str,
    tiny_name: str,
    options: dict[str, Any],
    tiny: Tiny,
    coffee: Image.Image,
    tmp_path: Path,
) -> None:
    spec = ComponentConfig(backend=name, options={"model": str(tiny(tiny_name)), **options})
    cfg = VisionConfig(device="cpu", faces=None, ocr=None, classifier=None).model_copy(update={role: spec})
    tb = VisionToolbox(cfg, cache_dir=tmp_path)
    backend = tb.backend(role)
    assert type(backend).__module__.startswith("hydra_vr.api.backends.hf_")
    with tb.recording() as calls:
        if role == "detector":
            dets = tb.find(coffee, "cup")
            assert dets and all(d.query == "cup" and d.box.x2 <= coffee.width and d.box.y2 <= coffee.height for d in dets)
        elif role == "vqa":
            ans = tb.simple_query(coffee, "what is in the cup?")
            assert isinstance(ans, Answer) and isinstance(ans.text, str) and ans.source == name
        elif role == "matcher":
            assert tb.best_text_match(coffee, TEXTS) in TEXTS
            assert tb.best_image_match([coffee, coffee.rotate(90)], "a cup") in (0, 1)
        elif role == "depth":
            value = tb.depth(coffee, Box(100, 50, 300, 200))
            assert math.isfinite(value) and value >= 1.0
        else:
            assert isinstance(tb.caption(coffee), str)
    assert tb.backend(role) is backend and calls  # each call was logged for the textualizer


# ------------------------------------------------------- loading and options
def test_loads_lazily_and_once(tiny: Tiny) -> None:
    det = make("owlv2", tiny("owlv2"))
    assert not det.loaded
    model = det.load().model
    assert det.loaded and det.load().model is model and model.training is False
    assert next(model.parameters()).dtype == torch.float32 and det.device == "cpu"


def test_device_and_dtype_options(tiny: Tiny) -> None:
    assert resolve_dtype("cpu", "auto") is torch.float32
    assert resolve_dtype("cuda:0", "auto") is torch.float16
    assert resolve_dtype("cpu", "bf16") is torch.bfloat16
    with pytest.raises(ValueError, match="unknown dtype"):
        resolve_dtype("cpu", "int3")
    ctx = ToolContext(device="cuda:3")
    m = default_vision_registry().create("clip", ctx=ctx, model=str(tiny("clip")), device="cpu")
    assert m.device == "cpu"  # the option wins over the context


def test_missing_local_directory_is_a_clear_error(tmp_path: Path) -> None:
    det = make("owlv2", tmp_path / "no_such_model")
    with pytest.raises(ModelLoadError, match="no_such_model.*no such local directory"):
        det.load()


def test_directory_without_weights_names_the_directory(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="local directory.*empty"):
        make("dpt", tmp_path / "empty").depth_map(Image.new("RGB", (8, 8)))


def test_uncached_hub_id_offline_says_what_is_needed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    det = default_vision_registry().create(
        "owlv2", ctx=ToolContext(), model="hydra-vr-tests/no-such-model", hub_cache_dir=str(tmp_path / "hf")
    )
    with pytest.raises(ModelLoadError) as info:
        det.detect(Image.new("RGB", (8, 8)), ["cat"])
    msg = str(info.value)
    assert "hydra-vr-tests/no-such-model" in msg and "hub access" in msg and "local directory" in msg
    assert isinstance(info.value, ToolUnavailableError)


def test_hub_profile_selects_these_backends_with_hub_ids() -> None:
    cfg = load_config("hub")
    assert cfg.vision.device == "auto"
    assert cfg.llm == load_config("default").llm
    registry = default_vision_registry()
    expected = {
        "detector": "owlv2",
        "depth": "depth_anything",
        "vqa": "blip2",
        "matcher": "clip",
        "captioner": "blip_caption",
    }
    for role, backend in expected.items():
        spec = getattr(cfg.vision, role)
        assert spec.backend == backend
        model_id = spec.options["model"]
        assert model_id.count("/") == 1 and not Path(model_id).exists()
        built = registry.create(spec.backend, ctx=ToolContext(), **spec.options)  # options are all accepted
        assert built.model_id == model_id and not built.loaded
