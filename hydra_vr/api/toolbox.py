"""VisionToolbox: builds each vision role lazily from the config and answers ImagePatch calls.

One toolbox per process holds the loaded models (no global singleton: whoever needs tools is
handed the toolbox). Every operation ImagePatch performs is a method here, so the sandbox can
proxy exactly this surface to the parent process.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from hydra_vr.api import colors as color_ops
from hydra_vr.api import expression as expression_ops
from hydra_vr.api import focus as focus_ops
from hydra_vr.api import light as light_ops
from hydra_vr.api import orientation as orientation_ops
from hydra_vr.api import shapes as shape_ops
from hydra_vr.api import size as size_ops
from hydra_vr.api import text_layout
from hydra_vr.api import tiles as tiles_ops
from hydra_vr.api import where as where_ops
from hydra_vr.api.properties import property_caption, property_question
from hydra_vr.api.tools import (
    Captioner,
    Classifier,
    DepthEstimator,
    Detector,
    FaceDetector,
    ImageTextMatcher,
    LikeliestDetector,
    Localizer,
    TextReader,
    ToolContext,
    VisualQA,
    default_vision_registry,
)
from hydra_vr.api.types import Answer, Box, ColorShare, Detection, LabelScore, TextRegion, ToolCallRecord, object_crop
from hydra_vr.config import ComponentConfig, VisionConfig
from hydra_vr.registry import Registry

log = logging.getLogger(__name__)

# Names that mean "text" are answered by OCR boxes, names that mean faces by the face detector:
# a closed-set object detector has no class for either.
TEXT_NAMES = frozenset(
    {"text", "texts", "word", "words", "writing", "letters", "letter", "number", "numbers", "digits", "caption", "title"}
)
FACE_NAMES = frozenset({"face", "faces", "human face", "person face", "head", "heads"})
_OCR_NAMES = TEXT_NAMES | text_layout.PARAGRAPH_NAMES | text_layout.CODE_NAMES  # every name find() asks the OCR

_ROLE_PROTOCOLS: dict[str, type] = {
    "detector": Detector,
    "faces": FaceDetector,
    "ocr": TextReader,
    "classifier": Classifier,
    "depth": DepthEstimator,
    "vqa": VisualQA,
    "matcher": ImageTextMatcher,
    "captioner": Captioner,
}


class ToolUnavailableError(RuntimeError):
    """A role is disabled in the config or its backend cannot serve this call."""


def _normalize_name(name: str) -> str:
    return re.sub(r"\s+", " ", name.strip().lower())


class VisionToolbox:
    """Lazily built vision backends plus the operations ImagePatch needs."""

    def __init__(
        self,
        config: VisionConfig | None = None,
        *,
        cache_dir: Path | str = "~/.cache/hydra-vr",
        llm: Callable[[], Any] | None = None,
        embedder: Callable[[], Any] | None = None,
        registry: Registry | None = None,
        read_question: Callable[[str], Any] | None = None,
    ) -> None:
        """``read_question``: a question's frame (``hydra_vr.question.parse`` when built by
        ``hydra_vr.factory.build_toolbox``), whose category, place and focus ``simple_query`` and the describe
        backend read; without it no question is answered by a measure or named from a category."""
        self.config = config or VisionConfig()
        self.registry = registry or default_vision_registry()
        self.ctx = ToolContext(
            device=self.config.device, cache_dir=Path(cache_dir).expanduser(), llm=llm, embedder=embedder, toolbox=self,
            read_question=read_question)
        self._backends: dict[str, Any] = {}
        self._lock = threading.RLock()  # backends may be built from worker threads
        self._depth_cache: OrderedDict[int, np.ndarray] = OrderedDict()
        # The calls of the program being served go to the list its caller opened with recording():
        # per context (thread), so concurrent episodes never see each other's calls, and nothing
        # accumulates when nobody records.
        self._recording: contextvars.ContextVar[list[ToolCallRecord] | None] = contextvars.ContextVar(
            f"tool_calls_{id(self)}", default=None)

    # ---------------------------------------------------------------- backends
    def backend(self, role: str) -> Any:
        """The backend filling ``role`` (built on first use); ToolUnavailableError if disabled."""
        with self._lock:
            if role in self._backends:
                return self._backends[role]
            spec: ComponentConfig | None = getattr(self.config, role)
            if spec is None:
                raise ToolUnavailableError(f"vision role {role!r} is disabled in this config")
            t0 = time.perf_counter()
            backend = self.registry.create(spec.backend, ctx=self.ctx, **spec.options)
            proto = _ROLE_PROTOCOLS[role]
            if not isinstance(backend, proto):
                raise TypeError(f"backend {spec.backend!r} cannot fill role {role!r}: it lacks {proto.__name__} methods")
            log.info("loaded %s backend %s in %.2fs", role, spec.backend, time.perf_counter() - t0)
            self._backends[role] = backend
            return backend

    def has(self, role: str) -> bool:
        return getattr(self.config, role, None) is not None

    def warm_up(self, roles: Sequence[str] | None = None) -> dict[str, float]:
        """Load the given roles (default: all enabled model-backed ones); returns seconds per role."""
        roles = roles or [r for r in ("detector", "faces", "ocr", "classifier", "depth") if self.has(r)]
        out: dict[str, float] = {}
        for role in roles:
            t0 = time.perf_counter()
            b = self.backend(role)
            if hasattr(b, "load"):
                b.load()
            out[role] = time.perf_counter() - t0
        return out

    def _record(self, tool: str, args: dict[str, Any], result: Any, t0: float, **meta: Any) -> None:
        calls = self._recording.get()
        if calls is not None:
            calls.append(ToolCallRecord(tool, args, result, (time.perf_counter() - t0) * 1000, meta))

    @contextlib.contextmanager
    def recording(self) -> Iterator[list[ToolCallRecord]]:
        """Collect the tool calls made in this context (a program step): ``with tb.recording() as calls:``."""
        calls: list[ToolCallRecord] = []
        token = self._recording.set(calls)
        try:
            yield calls
        finally:
            self._recording.reset(token)

    # -------------------------------------------------------------- operations
    def find(self, image: Image.Image, name: str, presumed: bool = False) -> list[Detection]:
        """Objects called ``name`` in ``image``, best first, boxes in ``image`` pixels. ``presumed``: the thing is
        known to be there (a referring expression names it): where every tool finds nothing, the detector's
        likeliest box for the name below its threshold (:meth:`look_for`)."""
        t0 = time.perf_counter()
        dets, meta = self.look_for(image, name, presumed=presumed)
        self._record("find", {"name": name, **({"presumed": True} if presumed else {})}, dets, t0, **meta)
        return dets

    def names_label(self, name: str, label: str | None) -> bool:
        """Whether ``name`` ("men") names what the detector labels ``label`` ("person"): the label itself
        (or its plural), or a class the closed-set detector maps the name to."""
        name, label = name.strip().lower(), (label or "").strip().lower()
        if not name or not label:
            return False
        if name in (label, label + "s", label + "es"):
            return True
        map_name = getattr(self.backend("detector"), "map_name", None) if self.has("detector") else None
        return map_name is not None and label in getattr(map_name(name), "classes", ())

    def look_for(self, image: Image.Image, name: str, presumed: bool = False) -> tuple[list[Detection], dict[str, Any]]:
        """find() without a record of the call: (detections best first, how they were looked for).

        ``meta["unsearchable"]`` marks a name no tool can look for (an empty result says nothing about
        the scene); ``meta["measured"]`` a search over every pixel (outlines, colour regions: nothing
        found means none there, unlike a detector's miss); ``meta["mapping"]`` says which tool looked and how. Backends (``describe``) use it
        to look for what a question asks about without the lookup showing as a call of the program.
        """
        key = _normalize_name(name)
        if not key:
            raise ValueError("find() needs a non-empty object name")
        meta: dict[str, Any] = {}
        if key in _OCR_NAMES and self.has("ocr"):
            regions, label = self.read_text(image), "text"
            if key in text_layout.PARAGRAPH_NAMES:  # "the second paragraph": runs of the OCR's lines
                regions, label = text_layout.paragraphs(regions), "paragraph"
                meta["mapping"] = f"{name!r}: the OCR's lines grouped into runs set close together"
            elif key in text_layout.CODE_NAMES:  # "the line of code": lines with a program's characters
                regions, label = text_layout.code_lines(regions), "code"
                meta["mapping"] = f"{name!r}: the OCR's lines that have a program's characters (=, brackets, calls)"
            dets = [Detection(r.box, label, r.score, "ocr", query=name, text=r.text) for r in regions]
        elif key in FACE_NAMES and self.has("faces"):
            dets = [
                Detection(d.box, d.label, d.score, d.source, query=name) for d in self.backend("faces").detect_faces(image)
            ]
        else:
            detector = self.backend("detector")
            if self.config.find_tiles is None:
                dets = detector.detect(image, [name])
            else:  # the whole image and its tiles: small things in a large photo
                dets = tiles_ops.sliced_detect(lambda view: detector.detect(view, [name]), image, self.config.find_tiles)
            explain = getattr(detector, "explain", None)
            if explain is not None:
                meta["mapping"] = explain(name)
            map_name = getattr(detector, "map_name", None)  # closed-set detectors: can it look for this name at all?
            missed = not dets
            if dets:  # "red car": the detector finds cars; their own pixels say which are red
                dets, meta["mapping"] = self._keep_colored(image, name, dets, meta.get("mapping") or f"{name!r}: the detector")
            if missed and map_name is not None and map_name(name) and self.config.missed_by_detector_score is not None:
                if (seen := self._classifier_regions(image, name, self.config.missed_by_detector_score)) is not None:
                    dets, how = seen
                    if dets and isinstance(detector, LikeliestDetector) and (best := detector.likeliest(image, [name])):
                        # the classifier says that the thing is there; where, the detector's own best box of the class
                        # says better than the classifier's coarse region (kept: its label, the finer name, and its score)
                        dets = [dataclasses.replace(dets[0], box=best[0].box), *dets[1:]]
                        how += f"; the first box is the detector's likeliest {best[0].label} box (its score {best[0].score:.2f})"
                    meta["mapping"] = f"{meta.get('mapping') or repr(name)}; the detector found none, {how}"
            if not dets and not presumed and map_name is not None and self._missed_person_has_no_face(image, name, map_name):
                # two tools that each see people saw none: that is a search, as an outline search is (NanoDet alone
                # misses small boats; a person it missed mostly shows a face the face detector finds)
                meta["mapping"] = f"{meta.get('mapping') or repr(name)}; the detector found no person and the face detector no face"
                meta["measured"] = True
            if map_name is not None and not map_name(name):
                kinds = shape_ops.shape_kinds(name) if self.config.shapes else ()
                colours = color_ops.region_colors(name)
                if kinds:  # no class, but an outline to look for: measured shapes, labelled as such
                    dets, meta["mapping"] = self._outlines(image, name, kinds)
                    meta["measured"] = True
                elif colours:  # a name that is only a colour ("yellow", "red thing"): regions of that colour
                    dets, meta["mapping"] = self._color_regions(image, name, colours)
                    meta["measured"] = True
                elif (seen := self._classifier_regions(image, name)) is not None:
                    dets, meta["mapping"] = seen
                    meta["unsearchable"] = not dets  # the classifier's miss is weak evidence of absence
                elif len(head := color_ops.head_colors(name)) == 1:  # "red balloon": no tool knows balloons
                    colour = color_ops.canonical_color(head[0])  # head_colors keeps known colour names only
                    assert colour is not None
                    dets, _ = self._color_regions(image, name, (colour,))
                    meta["mapping"] = (f"{name!r} names nothing a tool looks for; regions of {colour} pixels stand in "
                                       f"for it (not the backdrop)")
                    meta["measured"] = True  # no pixel of that colour: no such thing
                else:
                    meta["unsearchable"] = True  # an empty result says nothing about the scene
            if not dets and presumed and isinstance(detector, LikeliestDetector) and (dets := detector.likeliest(image, [name])):
                # a grounding's thing is in the photo: the detector's best guess beats no box at all
                meta["mapping"] = (f"{meta.get('mapping') or repr(name)}; nothing cleared the detector's threshold, and the "
                                   f"thing is presumed there: its likeliest {dets[0].label} box (score {dets[0].score:.2f})")
                meta["presumed"] = True
                meta.pop("unsearchable", None)
            if not dets and meta.get("mapping"):
                log.info("find(%r): %s", name, meta["mapping"])
        dets.sort(key=lambda d: d.score, reverse=True)
        return dets, meta

    def _missed_person_has_no_face(self, image: Image.Image, name: str, map_name: Any) -> bool:
        """Whether ``name`` means people only (the detector's person class: "children", "a man") and the face
        detector, a second tool that sees them, finds no face in ``image`` either."""
        return set(map_name(name).classes) == {"person"} and self.has("faces") and not self.backend("faces").detect_faces(image)

    def _outlines(self, image: Image.Image, name: str, kinds: tuple[str, ...]) -> tuple[list[Detection], str]:
        """find() by outline for a name the detector has no class for; returns (detections, how)."""
        dets = [Detection(s.box, s.kind, s.score, "shapes", query=name) for s in shape_ops.find_shapes(image, kinds)]
        how = f"{name!r} is not a detector class; looked for {' or '.join(kinds)} outlines in the pixels instead"
        return self._keep_colored(image, name, dets, how)

    def _classifier_regions(self, image: Image.Image, name: str, floor: float = 0.0) -> tuple[list[Detection], str] | None:
        """find() through the classifier for a name it has classes for (its ``localize``), its regions that
        score ``floor`` or more; None if it has no class for the name."""
        if not self.has("classifier"):
            return None
        classifier = self.backend("classifier")
        if not isinstance(classifier, Localizer) or not (classes := classifier.map_name(name)):
            return None
        dets = [d for d in classifier.localize(image, name) if d.score >= floor]
        if floor:  # beside the detector's own mapping: "dog" has 118 classes
            shown = ", ".join(classes[:5]) + (f" and {len(classes) - 5} more" if len(classes) > 5 else "")
            how = f"looked where the image classifier sees {shown} (at {floor:.2f} or more)"
        else:
            how = f"{name!r} is not a detector class; looked where the image classifier sees {', '.join(classes)}"
        dets, how = self._keep_colored(image, name, dets, how)
        return dets, how + ("" if dets else ": it saw none")

    @staticmethod
    def _keep_colored(image: Image.Image, name: str, dets: list[Detection], how: str) -> tuple[list[Detection], str]:
        """Keep the finds whose own pixels have the colours ``name`` gives its thing ("green shape", "black coat";
        not the shirt's red of "man in red shirt": :func:`colors.head_colors`)."""
        wanted = color_ops.head_colors(_normalize_name(name))
        if not wanted:
            return dets, how
        crops = [object_crop(image, d.box) for d in dets]
        kept = [d for d, crop in zip(dets, crops) if all(color_ops.has_color(crop, w, foreground=True)[0] for w in wanted)]
        return kept, how + f", kept {len(kept)} of {len(dets)} whose own pixels are {' and '.join(wanted)}"

    def _color_regions(self, image: Image.Image, name: str, colours: tuple[str, ...]) -> tuple[list[Detection], str]:
        """find() of a bare colour name: connected regions of pixels of that colour (each colour asked for)."""
        dets = [Detection(Box(*box), c, fill, "colors", query=name) for c in colours for box, fill in color_ops.color_regions(image, c)]
        return dets, f"{name!r} names only a colour; looked for regions of {' or '.join(colours)} pixels (not the backdrop)"

    def read_text(self, image: Image.Image) -> list[TextRegion]:
        t0 = time.perf_counter()
        regions = self.backend("ocr").read_text(image)
        self._record("read_text", {}, regions, t0)
        return regions

    def classify(self, image: Image.Image, top_k: int = 5) -> list[LabelScore]:
        t0 = time.perf_counter()
        labels = self.backend("classifier").classify([image], top_k=top_k)[0]
        self._record("classify", {"top_k": top_k}, labels, t0)
        return labels

    def standout(self, image: Image.Image) -> list[Detection]:
        """The region of ``image`` that stands out from its border by colour (none when nothing does): measured
        from pixels, no model. Grounding's last resort for a thing presumed there that no tool could find."""
        t0 = time.perf_counter()
        region = color_ops.standout_region(image)
        dets = [] if region is None else [Detection(Box(*region[0]), "region standing out", region[1], "pixels")]
        self._record("standout", {}, dets, t0, mapping="the pixels whose colours are commoner inside the patch than "
                     "along its border (a colour-contrast mask), the box of most of them")
        return dets

    def colors(self, image: Image.Image, top_k: int = 3, foreground: bool = False) -> list[ColorShare]:
        """Named colours from pixels (no model).

        ``foreground=True`` for an object's box crop: only the object's pixels (colour-contrast mask) count;
        otherwise (a scene) the patch centre weighs more than its border.
        """
        return color_ops.dominant_colors(image, top_k=top_k, foreground=foreground)

    def depth(self, original: Image.Image, box: Box) -> float:
        """Median relative depth of ``box`` in ``original`` (larger = farther)."""
        t0 = time.perf_counter()
        backend = self.backend("depth")
        patch_depth = getattr(backend, "patch_depth", None)
        if patch_depth is not None:  # heuristics that reason on the box itself
            value = float(patch_depth(original, box))
        else:
            key = id(original)
            dmap = self._depth_cache.get(key)
            if dmap is None:
                dmap = backend.depth_map(original)
                self._depth_cache[key] = dmap
                while len(self._depth_cache) > 4:
                    self._depth_cache.popitem(last=False)
            b = box.clip(dmap.shape[1], dmap.shape[0])
            region = dmap[int(b.y1) : max(int(b.y1) + 1, int(round(b.y2))), int(b.x1) : max(int(b.x1) + 1, int(round(b.x2)))]
            value = float(np.median(region)) if region.size else float(np.median(dmap))
        self._record("compute_depth", {"box": box.to_list()}, value, t0)
        return value

    def focus(self, original: Image.Image, box: Box | None = None, background: bool = False) -> focus_ops.Focus | None:
        """How sharp ``box`` of the photo ``original`` is (the whole photo when None; its background, the
        border, with ``background``): pixels only (``api.focus``). None when the region has too little detail."""
        t0 = time.perf_counter()
        where = box.to_list() if box is not None else None
        result = focus_ops.patch_focus(original, where, background)
        self._record("focus", {"box": where, "background": background}, result, t0)
        return result

    def simple_query(self, image: Image.Image, question: str, box: Box | None = None,
                     photo_size: Sequence[int] | None = None) -> Answer:
        """The answer to ``question`` about ``image``; ``box`` and ``photo_size`` say where ``image`` lies in
        its whole photo when it is a part of it (a patch's crop; None for the whole photo). A question
        where a thing lies ("on the left or the right?") is answered from boxes when the tools find it
        (``api.where``), whatever the VQA backend."""
        if not str(question).strip():  # str(): a "no" Reply is false but not empty
            raise ValueError("simple_query() needs a non-empty question")
        t0 = time.perf_counter()
        ans = self._measured(image, str(question), box, photo_size) or self.backend("vqa").answer(image, question)
        self._record("simple_query", {"question": question}, ans, t0)
        return ans

    def _measured(self, image: Image.Image, question: str, box: Box | None = None,
                  photo_size: Sequence[int] | None = None) -> Answer | None:
        """The answer the boxes or pixels give, before any VQA backend: where a thing lies (``api.where``),
        how sharp a part of the whole photo is (``api.focus``), the whole photo's light (``api.light``: day or
        night, a clear sky), which way up its text is (``api.orientation``), whether its faces smile
        (``api.expression``); None when they do not decide."""
        frame = self._frame(question)
        placed = (where_ops.answer_place(self.look_for, image, frame.place, box.to_list(None) if box else None, photo_size)
                  if frame is not None and frame.place is not None else None)
        if placed is not None:
            return Answer(text=placed[0], source="place", evidence=placed[1])
        focused = (focus_ops.answer_focus(self.look_for, image, question, frame.focus)
                   if frame is not None and frame.focus is not None and box is None else None)
        if focused is not None:
            return Answer(text=focused[0], source="focus", evidence=focused[1])
        lit = (light_ops.answer_light(image, frame.light)
               if frame is not None and frame.light is not None and box is None else None)
        if lit is not None:
            return Answer(text=lit[0], source="light", evidence=lit[1])
        ocr = self.backend("ocr") if frame is not None and frame.orientation is not None and self.has("ocr") else None
        oriented = (orientation_ops.answer_orientation(ocr.line_orientations(image), frame.orientation)
                    if ocr is not None and hasattr(ocr, "line_orientations") else None)
        if oriented is not None:
            return Answer(text=oriented[0], source="orientation", evidence=oriented[1])
        return self._expressed(image, frame) or self._sized(question, box, photo_size)

    def _frame(self, question: str) -> Any:
        """``question``'s frame, or None for a toolbox told nothing of questions (no ``read_question``)."""
        return self.ctx.read_question(question) if self.ctx.read_question is not None else None

    def _expressed(self, image: Image.Image, frame: Any) -> Answer | None:
        """The answer the faces of ``image`` give to "Is the chef smiling?" (``frame``: the question's, or None;
        ``api.expression``), else None."""
        if frame is None or frame.smile is None or not self.has("faces"):
            return None
        readings = expression_ops.read_faces(image, self.backend("faces").detect_faces(image))
        said = expression_ops.answer_smile(readings, frame.smile)
        return Answer(text=said[0], source="expression", evidence=said[1]) if said is not None else None

    @staticmethod
    def _sized(question: str, box: Box | None, photo_size: Sequence[int] | None) -> Answer | None:
        """The answer a patch's box gives to "Is the <thing> big?" (``api.size``), else None."""
        sized = size_ops.answer_size(question, box.to_list(None) if box else None, photo_size)
        return Answer(text=sized[0], source="size", evidence=sized[1]) if sized is not None else None

    def verify_property(self, image: Image.Image, name: str, prop: str, foreground: bool = False,
                        box: Box | None = None, photo_size: Sequence[int] | None = None) -> tuple[bool, str]:
        """Whether the ``name`` in ``image`` has ``prop``; returns (verdict, evidence).

        ``foreground``: ``image`` is an object's box crop, so colours count the object's pixels only;
        ``box`` and ``photo_size``: where that crop lies in its photo (how big it is there).
        """
        t0 = time.perf_counter()
        question = property_question(name, prop)
        if color_ops.is_color_name(prop):
            # Colours are measured from pixels rather than guessed by a model.
            verdict, evidence = color_ops.has_color(image, prop, foreground=foreground)
        # "background", "blurry" of the whole photo, "big" of a crop by its box: measured, whatever the backends
        elif (measured := self._expressed(image, self._frame(question)) or self._sized(question, box, photo_size)
              if foreground else self._measured(image, question)) is not None:
            verdict, evidence = measured.text == "yes", measured.evidence or measured.text
        elif self.has("matcher"):
            scores = self.backend("matcher").match([image], [property_caption(name, prop), f"a photo of a {name}"])[0]
            verdict, evidence = bool(scores[0] > scores[1]), f"matcher scores {scores[0]:.3f} vs {scores[1]:.3f}"
        else:
            ans = self.backend("vqa").answer(image, f"{question} Answer yes or no.")
            verdict, evidence = ans.text.strip().lower().startswith("yes"), ans.evidence or ans.text
        self._record("verify_property", {"name": name, "property": prop}, verdict, t0, evidence=evidence)
        return verdict, evidence

    def best_text_match(self, image: Image.Image, options: Sequence[str], foreground: bool = False) -> str:
        """The option that best describes ``image``; ``foreground`` as in :meth:`verify_property`."""
        options = [o for o in options if isinstance(o, str) and o.strip()]
        if not options:
            raise ValueError("best_text_match() needs at least one non-empty option")
        t0 = time.perf_counter()
        meta: dict[str, Any] = {}
        if len(options) == 1:
            best = options[0]
        elif all(color_ops.is_color_name(o) for o in options):
            reading = color_ops.read_colors(image, foreground=foreground)
            best = color_ops.match_color(reading, options)
            meta["evidence"] = color_ops.evidence(reading)
        elif self.config.shapes and (shaped := self._shape_option(image, options)) is not None:
            best, meta["evidence"] = shaped
        elif self.has("matcher"):
            scores = self.backend("matcher").match([image], list(options))[0]
            best = options[int(np.argmax(scores))]
        else:
            listed = ", ".join(options)
            ans = self.backend("vqa").answer(image, f"Which of these best describes the image: {listed}? Answer with one of them.")
            best = _closest_option(ans.text, options)
        self._record("best_text_match", {"options": list(options)}, best, t0, **meta)
        return best

    @staticmethod
    def _shape_option(image: Image.Image, options: Sequence[str]) -> tuple[str, str] | None:
        """Options that are each one shape kind ("circle", "triangle", "square"): the kind of the best
        outline measured in the patch (its silhouette for an object's crop); None when none is found."""
        kinds = [shape_ops.shape_kinds(o) for o in options]
        if not all(len(k) == 1 for k in kinds):
            return None
        hits = shape_ops.find_shapes(image, tuple(dict.fromkeys(k[0] for k in kinds)))
        if not hits:
            return None
        best = next(o for o, k in zip(options, kinds) if k[0] == hits[0].kind)
        return best, f"outline measured: {hits[0].kind} (fit {hits[0].score:.2f})"

    def _paint_of_others(self, photo: Image.Image, boxes: Sequence[Box], text: str) -> set[int]:
        """Indices of the colour regions in ``boxes`` that are another object's own colour: the biggest one
        inside a detected object's box (a tenth of it or more) whose class ``text`` does not name. Asked for a
        red crate on a shelf behind a red motorbike, four red regions came back; the first, the bike's
        red tank and side panel, was taken for the crate (the crate lies inside the bike's box too, but
        is smaller than its paint)."""
        if not self.has("detector") or not hasattr(self.backend("detector"), "detect_classes"):
            return set()
        words = re.findall(r"[a-z]+", text.lower())
        painted: set[int] = set()
        for det in self.backend("detector").detect_classes(photo):
            if any(self.names_label(w, det.label) for w in words):
                continue  # "the red motorcycle": its paint is what is asked for
            inside = [i for i, b in enumerate(boxes) if b.intersection(det.box) >= 0.9 * b.area > 0]
            if inside:
                biggest = max(inside, key=lambda i: boxes[i].area)
                if boxes[biggest].area >= 0.1 * det.box.area:
                    painted.add(biggest)
        return painted

    def best_image_match(self, images: Sequence[Image.Image], text: str, boxes: Sequence[Box] | None = None,
                         labels: Sequence[str] | None = None, photo: Image.Image | None = None) -> int:
        """Index of the image that best matches ``text``; ``boxes``, ``labels`` and ``photo`` say where each
        image lies in its photo and what found it (optional)."""
        if not images:
            raise ValueError("best_image_match() needs at least one image")
        t0 = time.perf_counter()
        if self.has("matcher"):
            scores = self.backend("matcher").match(list(images), [text])[:, 0]
            idx = int(np.argmax(scores))
        else:  # the first image the VQA backend says yes to, else the first; the images after a yes are not
            # asked (offline each is an LLM call: 12 colour regions of "the black seat" took 12 calls)
            order = list(range(len(images)))
            if photo is not None and boxes and labels and all(color_ops.is_color_name(lb) for lb in labels):
                # colour regions that are another object's own colour (the motorcycle's red for "the red
                # storage box") are asked last
                painted = self._paint_of_others(photo, list(boxes), text)
                order.sort(key=lambda i: i in painted)
            idx = order[0]
            for i in order:
                ans = self.backend("vqa").answer(images[i], f"Does this image show {text}? Answer yes or no.")
                if ans.text.strip().lower().startswith("yes"):
                    idx = i
                    break
        self._record("best_image_match", {"text": text, "n": len(images)}, idx, t0)
        return idx

    def caption(self, image: Image.Image) -> str:
        t0 = time.perf_counter()
        if self.has("captioner"):
            text = self.backend("captioner").caption(image)
        else:
            text = self.backend("vqa").answer(image, "Describe the image in one sentence.").text
        self._record("caption", {}, text, t0)
        return text

    def llm_query(self, question: str, long_answer: bool = True) -> str:
        if self.ctx.llm is None:
            raise ToolUnavailableError("llm_query() needs an LLM; none is configured for this toolbox")
        from hydra_vr.llm.base import ChatMessage

        t0 = time.perf_counter()
        style = "Answer in a short paragraph." if long_answer else "Answer in at most three words, no punctuation."
        res = self.ctx.llm().chat(
            [ChatMessage("system", "You answer general-knowledge questions. " + style), ChatMessage("user", question)],
            max_tokens=200 if long_answer else 16,
        )
        text = res.text.strip()
        self._record("llm_query", {"question": question}, text, t0)
        return text


def _closest_option(text: str, options: Sequence[str]) -> str:
    """Map a free-text reply onto one option: exact, then substring, then word overlap."""
    t = text.strip().lower().strip(".!\"' ")
    for o in options:
        if t == o.lower():
            return o
    hits = [o for o in options if o.lower() in t]
    if hits:
        return max(hits, key=len)
    words = set(re.findall(r"\w+", t))
    return max(options, key=lambda o: len(words & set(re.findall(r"\w+", o.lower()))))
