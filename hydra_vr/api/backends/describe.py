"""simple_query / verify_property for the offline profile: an LLM answers from tool findings.

No VQA or image-text weights ship in any installable package, so this backend looks at the patch
with the tools that do exist (detector labels with scores and boxes, ImageNet labels, pixel
colours, OCR text, faces), writes them as a compact description, and asks the configured LLM to
answer from it. It is honest about what it is: a language model reasoning over tool outputs, not
a model that sees pixels. Hub users swap in BLIP / BLIP-2 / LLaVA by config.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

from PIL import Image

from hydra_vr.answer_types import COLOR_WORDS, AnswerSpec, KnowledgeAsked, asked_knowledge, asked_presence, asks_to_read, clean, expected_type
from hydra_vr.api import choose as choose_ops
from hydra_vr.api import colors as color_ops
from hydra_vr.api import companion as companion_ops
from hydra_vr.api import garments as garment_ops
from hydra_vr.api import hair as hair_ops
from hydra_vr.api import placement as placement_ops
from hydra_vr.api import shapes as shape_ops
from hydra_vr.api import text_layout
from hydra_vr.api.backends import imagenet
from hydra_vr.api.backends.coco import CocoNameMapper
from hydra_vr.api.tools import Localizer, ToolContext, search_settles
from hydra_vr.api.types import Answer, Box, Detection, is_object_crop, object_crop, one_box_per_thing
from hydra_vr.lexicon import wordnet as wn
from hydra_vr.prompts import load_examples, render_prompt

log = logging.getLogger(__name__)

# questions about text, or about a thing made of it ("Is there a formula on the whiteboard?"): OCR runs for them
_TEXT_QUESTION = re.compile(r"\b(text|written|write|say|says|read|word|words|letter|sign|number|brand|name|title|label|logo"
                            r"|code|page|pages|paper|document|book|poster|equation|formula|printed|handwrit\w*|typed)\b", re.I)
_PEOPLE_QUESTION = re.compile(r"\b(face|faces|person|people|man|woman|boy|girl|child|who)\b", re.I)


def _relevant_classes(question: str, mapper: CocoNameMapper, frame: Any = None) -> dict[str, str]:
    """Detector classes the question names ("the man's shirt" -> person), by the detector's own mapping, each with
    the name that asks for it (the first, in the question's order); a part of the thing the frame names stands only
    for classes of its own kind (:func:`_subject_classes`)."""
    words = re.findall(r"[a-z]+", question.lower())
    names = [*words, *(f"{a} {b}" for a, b in zip(words, words[1:]))]
    part = frame is not None and frame.subject and frame.whole and wn.part_of(frame.subject, frame.whole)
    skip = {frame.subject, frame.subject.split()[-1]} if part else set()
    named: dict[str, str] = {}
    for n in names:
        if n not in _STOPWORDS and skip.isdisjoint([n, *n.split()]):
            for c in mapper.map(n).classes:
                named.setdefault(c, n)
    for c in _subject_classes(frame, mapper) if part else set():
        named.setdefault(c, frame.subject)
    return named


def _one_per_thing(dets: Sequence[Detection], named: dict[str, str], iou: float | None) -> list[Detection]:
    """``dets`` (best first) less those of the classes of one name (``named``: :func:`_relevant_classes`) that cover the
    same pixels as a better one, as find() keeps them (``types.one_box_per_thing``): the detector's listing holds one
    car under car and truck, and "What kind of vehicle ..." read both. ``iou`` None (a detector that takes each name as
    one label): all kept. Things no name asks for are kept."""
    if iou is None:
        return list(dets)
    asked = [Detection(d.box, d.label, d.score, d.source, query=named[d.label]) for d in dets if d.label in named]
    kept = {(d.label, d.box) for d in one_box_per_thing(asked, iou)}
    return [d for d in dets if d.label not in named or (d.label, d.box) in kept]


def _subject_classes(frame: Any, mapper: CocoNameMapper) -> set[str]:
    """The detector classes of the frame's subject. Where it is a part of the whole the frame names (WordNet), only
    classes that are it or a kind of it: the mapper's synonyms go by a word's other senses ("the truck's cab" -> car,
    as a taxi is; "the laptop's keyboard" -> keyboard stays)."""
    classes = set(mapper.map(frame.subject).classes)
    if not (frame.whole and wn.part_of(frame.subject, frame.whole)):
        return classes
    return {c for c in classes if (sense := wn.main_sense(c)) is not None and wn.is_a(sense, frame.subject.split()[-1])}


_STOPWORDS = {"what", "which", "who", "where", "how", "is", "are", "the", "a", "an", "this", "that", "of", "in", "on",
              "color", "colour", "many", "there", "picture", "image", "photo", "left", "right", "top", "bottom"}


def _named(shares: list, floor: float = 0.05) -> list[str]:
    """Colour shares as the findings write them ("red 37%"), those under ``floor`` left out."""
    return [f"{c.name} {c.fraction:.0%}" for c in shares if c.fraction >= floor]


def _colors_seen(findings: dict, floor: float = 0.2) -> tuple[str, ...]:
    """The colours a colour answer is kept to: those measured on what the question names (an object, a body
    part, a shape), else on the patch's subject, else on the whole patch (the border for a question about the
    background), each with at least ``floor`` of its pixels (the first of each list always), and the words
    that name the same colour ("navy" for blue). The LLM sees no pixels: a colour no tool measured is a
    guess from habit ("What color is the towel?" -> white beside "red 51%": the towel is red), and the
    whole patch's colours beside the named thing's are mostly the backdrop's. Of people whose worn part
    the question asks about, the one it places is alone."""
    if findings.get("part"):  # a part no tool locates: any colour measured on its whole, the small shares too
        return _with_aliases({_share(share)[0] for share in findings["part"]["colors"]})
    named = [_chromatic_first(o.get("colors") or [], floor) for o in findings.get("relevant") or []]
    worn = findings.get("worn") or {}
    # "the hair of the woman on the left": her colours, not the other woman's too (a small model gave the other's)
    named += [_chromatic_first(p.get("colors") or [], floor) for p in worn.get("people", [])[: 1 if worn.get("placed") else None]]
    named += [_chromatic_first(s.get("colors") or [], floor) for s in findings.get("shapes") or []]
    if findings.get("background") or not any(named):
        named = [findings.get("subject_colors") or findings.get("colors") or []]
        if findings.get("standout"):  # what stands out is another thing than the one asked about: the rest counts too
            named.append(findings.get("colors") or [])
    seen = set()
    for shares in named:
        for i, share in enumerate(shares):
            name, pct = _share(share)
            if i == 0 or pct >= 100 * floor:
                seen.add(name)
    return _with_aliases(seen)


_ACHROMATIC = ("black", "white", "gray")


def _chromatic_first(shares: list[str], floor: float) -> list[str]:
    """A thing's own colour shares (an object's, a worn garment's, a shape's: "black 58%", "blue 38%") with a hue that
    holds at least ``floor`` of its pixels put before the black, white and gray ones, which then drop out of what an
    answer is kept to. On an
    object's own pixels those are mostly shade, highlight and gaps (a green kite against the light reads black first),
    and a person names a thing by its hue. Brown stays where it is: it is a thing's own colour (wood, leather) as
    often as a hue in shade."""
    read = [_share(s) for s in shares]
    if not read or read[0][0] not in _ACHROMATIC:
        return shares
    hues = [s for s, (name, pct) in zip(shares, read) if name not in (*_ACHROMATIC, "brown") and pct >= 100 * floor]
    rest = [s for s, (name, _) in zip(shares, read) if s not in hues and name not in _ACHROMATIC]
    return hues + rest if hues else shares


def _share(share: str) -> tuple[str, float]:
    """("red", 37.0) of a findings' colour share "red 37%"."""
    name, pct = share.rsplit(" ", 1)
    return name, float(pct.rstrip("%"))


def _with_aliases(seen: set[str]) -> tuple[str, ...]:
    """``seen`` and the words that name the same colours ("navy" for blue), sorted."""
    seen = seen | {word for word, base in color_ops.ALIASES.items() if base in seen and word in COLOR_WORDS}
    return tuple(sorted(seen))


_PART_FLOOR = 0.01  # a part's share of its whole's box: a tongue or a lamp may be 1% of it


def _part_colors(image: Image.Image, box: list[int] | None) -> list[str]:
    """The colours of a whole (its box in ``image``, else all of ``image``), every one of at least
    :data:`_PART_FLOOR` of its pixels, over the whole box: the object mask leaves out a small part of another
    colour (a tongue, a lamp) as background."""
    patch = object_crop(image, Box(*box)) if box is not None else image
    return _named(color_ops.read_colors(patch).shares(top_k=8), _PART_FLOOR)


def _measured_options(options: Sequence[str], seen: Sequence[str]) -> tuple[str, ...]:
    """The options of a choice between colours ("is it green or yellow?") that the measures saw (:func:`_colors_seen`),
    each compared by its base colour ("navy" is blue); none when no option was seen (then the choice stays whole)."""
    bases = {color_ops.canonical_color(c) for c in seen}
    return tuple(o for o in options if color_ops.canonical_color(o) in bases)


def _options_reversed(question: str, options: Sequence[str]) -> str | None:
    """``question`` with its options in reverse order ("Is the jar open or shut?" -> "... shut or open?"): each option's
    last occurrence before the next one's, their written spans swapped; None when an option is not written in it."""
    spans: list[tuple[int, int]] = []
    end = len(question)
    for option in reversed(options):
        hits = list(re.finditer(rf"\b{re.escape(option)}\b", question[:end], re.I))
        if not hits:
            return None
        spans.insert(0, (hits[-1].start(), hits[-1].end()))
        end = hits[-1].start()
    words = [question[a:b] for a, b in spans][::-1]
    out, last = [], 0
    for (a, b), word in zip(spans, words):
        out += [question[last:a], word]
        last = b
    return "".join(out) + question[last:]


def _unchecked(kind: str, search: dict | None) -> bool:
    """A yes/no question no search answered ("Is the door open?", "Does the dog have spots?"): the findings
    list what the tools can see, so a small model read every unlisted thing as a "no" (16 of 18 yes/no
    benchmark questions answered "no", 11 of them wrong). Said in the findings, examples too."""
    return kind == "yesno" and not search


def _nothing_bears(findings: dict, question: str) -> bool:
    """A yes/no question (``_unchecked``) that no finding bears on either: a state or a detail, or a presence
    question whose search settled nothing (``_search``: no tool could look for the thing, or the detector missed it;
    a negated one, "is there no ...?", stays the LLM's), no text read (a car may say "electric"), no garment
    classified, no colour named (what the measures settle)."""
    presence = asked_presence(question)
    return (findings["unchecked"] and (presence is None or not presence.negated) and not findings["texts"]
            and not findings["worn"] and not any(color_ops.is_color_name(w) for w in re.findall(r"[a-z]+", question.lower())))


_BIG_TEXT = re.compile(r"\b(big|bigger|biggest|large|larger|largest|huge|giant)\b", re.I)


def _echoed_label(findings: dict, spec: AnswerSpec) -> Callable[[str], str | None] | None:
    """For a city question, a check refusing a city that is a word of a tool's label: asked where a street
    photo was taken, a small model answered "police", then (with towns under 100k left out) "van", both from
    the classifier's "police van"; Police and Van are towns, the check let them through."""
    if spec.names != "city":
        return None
    labels = [label for label, _ in findings["classified"]]
    labels += [o["label"] for o in findings["relevant"] + findings["objects"]]
    words = {w for label in labels for w in re.findall(r"[a-z]+", label.lower())}

    def refuse(answer: str) -> str | None:
        said = re.findall(r"[a-z]+", answer.lower())
        if said and set(said) <= words:
            return f"'{answer}' is a word of what the tools named in the photo, not the city it was taken in"
        return None

    return refuse


def _largest_first(regions: list) -> list:
    """OCR lines with letters nearly as tall as the tallest (within 25%) first, in reading order, then the
    rest: asked for the largest words painted on a vehicle, a small model took the first line read,
    a small logo, over a slogan in letters three times its height."""
    if not regions:
        return regions
    tallest = max(r.box.height for r in regions)
    big = [r for r in regions if r.box.height >= 0.75 * tallest]
    return big + [r for r in regions if r not in big]


_SAME_TEXT = 0.8  # difflib ratio from which an answer is taken for an OCR line it rewrote
_MAX_READ_WORDS = 8  # a block longer than this is a page's paragraph, not a label: the line alone answers


def _as_written(answer: str, lines: list) -> str | None:
    """The text as the OCR read it, for an answer to a reading question that rewrote one of its lines: the
    paragraph holding the closest line (``text_layout.paragraphs``), lower case; None when no line is that
    close, or the answer already is its paragraph. Asked for the words in big letters, a small model
    respelled a foreign word of a two-line slogan that the OCR had read right."""
    said = clean(answer)
    if not said or not lines:
        return None
    ratio, best = max(((difflib.SequenceMatcher(None, said, r.text.lower()).ratio(), r) for r in lines), key=lambda t: t[0])
    if ratio < _SAME_TEXT:
        return None
    block = next((p for p in text_layout.paragraphs(lines) if p.box.intersection(best.box) >= 0.9 * best.box.area), best)
    if len(block.text.split()) > _MAX_READ_WORDS:
        block = best
    text = " ".join(block.text.lower().split())
    return None if text == said else text


# the background itself ("which colour is the backdrop?"), not a thing in it ("the car in the background")
_BACKGROUND_QUESTION = re.compile(r"\bcolou?rs?\s+(?:is|are|of)\s+the\s+(?:background|backdrop)\b|\b(?:background|backdrop)\s+colou?r", re.I)
_ROWS_QUESTION = re.compile(r"\b(rows?|columns?)\b", re.I)


def _rows(question: str, boxes: list[list[int]], what: str) -> dict | None:
    """For a question about rows or columns ("how many apples are in the bottom row?"), how the shapes found
    (else the detections the question names) fall into them: a small model could not group 24 boxes itself."""
    m = _ROWS_QUESTION.search(question)
    if m is None or len(boxes) < 2:
        return None
    if expected_type(question).kind != "number" and not re.search(r"\b(which|what)\s+(row|column)", question, re.I):
        return None  # "are the porch's columns white?" asks about no grouping
    columns = m.group(1).lower().startswith("column")
    groups = placement_ops.rows(boxes, columns=columns)
    return {"what": what, "n": len(boxes), "axis": "columns" if columns else "rows",
            "order": "left to right" if columns else "top to bottom", "counts": [len(g) for g in groups]}


class DescribeVQA:
    """Options: max_objects, classifier_top_k, ocr ("auto": for questions about text or a thing made of it,
    and for questions that ask for a city or a country; "always"; "never"),
    relevant_colors (how many of the objects the question names get their own measured colours),
    worn_people (for a question about clothing, how many people get the garments classified on the
    body part it asks about), knowledge_score (the detector's score or classifier's probability at which a label names
    the thing a knowledge question points at: "Is this fruit usually eaten raw or cooked?" is asked of the
    LLM's knowledge as "Is this fruit (mango) ..."), category_score and category_top_k (for a question that
    asks which kind of a category, "What bird is this?": the share of the classifier's first category_top_k
    labels that must be kinds of it for their name at that level to be the answer), yesno_prior (the answer to
    a yes/no question no tool could check, a state, a detail or a presence no search settled: "yes", "no", or null to
    ask the LLM), choice_prior (a choice the LLM answers is asked again with its options in reverse order; where the
    answer follows the order, "first" answers the first option as written; null asks once)."""

    def __init__(self, ctx: ToolContext, *, max_objects: int = 12, classifier_top_k: int = 3, ocr: str = "auto",
                 max_tokens: int = 24, relevant_colors: int = 2, retries: int = 1, worn_people: int = 3,
                 knowledge_score: float = 0.5, category_score: float = 0.3, category_top_k: int = 20,
                 yesno_prior: str | None = "yes", choice_prior: str | None = "first") -> None:
        if ocr not in {"auto", "always", "never"}:
            raise ValueError("describe: ocr must be 'auto', 'always' or 'never'")
        if yesno_prior not in {"yes", "no", None}:
            raise ValueError("describe: yesno_prior must be 'yes', 'no' or null")
        if choice_prior not in {"first", None}:
            raise ValueError("describe: choice_prior must be 'first' or null")
        self.ctx = ctx
        # one parse per question: the findings' helpers each read the frame (a parse is ~25 ms of WordNet lookups)
        self._frames = functools.lru_cache(maxsize=32)(lambda question: self.ctx.read_question(question))
        self.max_objects = max_objects
        self.classifier_top_k = classifier_top_k
        self.ocr = ocr
        self.max_tokens = max_tokens
        self.relevant_colors = relevant_colors
        self.retries = retries
        self.worn_people = worn_people
        self.knowledge_score = knowledge_score  # the confidence that names "this <thing>"
        self.category_score = category_score  # the classifier's share that names "what <category>"
        self.category_top_k = category_top_k
        # The LLM sees no pixels: on a yes/no that no finding bears on, its "yes" or "no" is a guess, and a guess
        # loses to the answers' prior. VQA v2's "prior (yes)" baseline is right on 61% of its yes/no questions;
        # asked of what a photo shows, "yes" is the likelier answer.
        self.yesno_prior = yesno_prior
        # A small model picks an option by its place in the list (the last one, by habit), not by what the findings
        # say: asked both ways round it then answers both ways. Where it does, its pick is no evidence, and the
        # option a question names first is the likelier answer, as one asks "is it open or shut?" of an open jar.
        self.choice_prior = choice_prior
        self._mapper = CocoNameMapper()
        self._prefix: list | None = None

    def describe(self, image: Image.Image, question: str) -> dict:
        """The findings the LLM sees, as template variables (also returned as evidence).

        Objects the question names come first, each with colours measured on the object itself.
        """
        tb = self.ctx.toolbox
        if tb is None:
            raise RuntimeError("describe backend needs a toolbox in its context")
        detector = tb.backend("detector")
        if hasattr(detector, "detect_classes"):
            dets = detector.detect_classes(image)
        else:  # open-vocabulary detectors need names: ask for the ones the question mentions
            dets = detector.detect(image, re.findall(r"[a-z]+", question.lower()))
        spec = expected_type(question)
        kind = spec.kind
        # one face search for both the garment parts and the face count
        found_faces = functools.cache(lambda: [f.box.to_list(0) for f in tb.backend("faces").detect_faces(image)]
                                      if tb.has("faces") else [])
        worn = self._worn(image, question, kind, [d for d in dets if d.label == "person"], found_faces)
        # the colours of the body part asked about stand for the person's ("his hair"), not the whole box's
        part_colors = bool(worn) and any(p["colors"] for p in worn["people"])
        wanted = _relevant_classes(question, self._mapper, self._frame(question))
        dets = _one_per_thing(dets, wanted, getattr(detector, "same_thing_iou", None))
        relevant, objects = [], []
        for d in dets[: self.max_objects]:
            item = {"label": d.label, "score": d.score, "box": [int(v) for v in d.box.to_list(0)]}
            if d.label in wanted or (not hasattr(detector, "detect_classes")):
                item["colors"] = []
                if len(relevant) < self.relevant_colors and not (part_colors and d.label == "person"):
                    crop = object_crop(image, Box(*item["box"]))
                    item["colors"] = _named(tb.colors(crop, foreground=True))
                relevant.append(item)
            else:
                objects.append(item)
        classified = tb.backend("classifier").classify([image], top_k=self.classifier_top_k)[0] if tb.has("classifier") else []
        labels = [f"{ls.label} ({ls.score:.2f})" for ls in classified]
        colors = _named(color_ops.dominant_colors(image))
        # A colour question about a thing the detector did not find: the whole patch's colours are mostly
        # background; the pixels that differ from the patch border's colours are the likelier subject.
        subject_colors = standout = None
        background = kind == "color" and _BACKGROUND_QUESTION.search(question) is not None
        if background:  # "which colour is the backdrop?" asks for the border's colours, not the subject's
            colors = _named(color_ops.border_colors(image))
        elif (not self._subject_listed(question, relevant) and not (worn and worn["colors"]) and kind == "color"
              and (found := self._searched(image, question))):
            # the thing asked about, where find()'s own search locates it: its own colours, not those of the other
            # things the question names to say which one it is ("the umbrella of the man": the man's coat was read)
            objects = [{k: v for k, v in o.items() if k != "colors"} for o in relevant] + objects
            relevant = [found]
        elif not relevant and not (worn and worn["colors"]) and kind == "color":
            border = color_ops.border_colors(image)
            if border and border[0].fraction >= 0.8:  # a plain backdrop (a page, a wall): what differs from it
                subject = color_ops.standout_colors(image)
            else:  # the subject touches the border (a patch cropped to its object) or a scene: its colour-contrast mask
                subject = color_ops.dominant_colors(image, foreground=True)
            subject_colors = _named(subject, 0.2)
            if subject_colors:  # the whole-patch shares would list the background first; say what it is
                colors = _named(border)
                standout = self._standout_other(question, classified)
        part = self._part(image, question, dets) if kind == "color" and not background else None
        texts, regions, big_text = None, [], _BIG_TEXT.search(question) is not None
        # a question for a city or a country reads signs too: a city's name is often painted on its trams
        # ... and so does a yes/no question about what a thing is: "Is the car electric?" may be written on
        # it ("electric", "zero emissions"); not a presence question, which a search answers
        reads = (_TEXT_QUESTION.search(question) is not None or spec.names is not None
                 or set(spec.options) == {"yes", "no"} and asked_presence(question) is None)  # verify_property's too
        if tb.has("ocr") and (self.ocr == "always" or (self.ocr == "auto" and reads)):
            regions = tb.backend("ocr").read_text(image)
            texts = [r.text for r in (_largest_first(regions) if big_text else regions)]
        faces = None
        if tb.has("faces") and _PEOPLE_QUESTION.search(question):
            faces = len(found_faces())
        shapes, shape_boxes = self._shapes(image, question)
        rows = _rows(question, shape_boxes or [o["box"] for o in relevant], "shapes" if shape_boxes else "objects")
        search = self._search(image, question)
        counted = self._count_search(image, question) if kind == "number" else None
        return {"width": image.width, "height": image.height, "relevant": relevant, "objects": objects, "labels": labels,
                "colors": colors, "subject_colors": subject_colors, "standout": standout, "texts": texts, "faces": faces,
                "worn": worn,
                "shapes": shapes, "shapes_total": len(shape_boxes), "rows": rows, "search": search, "background": background,
                "part": part,
                "texts_by_size": texts is not None and big_text, "unchecked": _unchecked(kind, search), "question": question,
                "classified": [(ls.label, ls.score) for ls in classified],  # not shown: what _thing_name reads
                "read": regions,  # not shown: the OCR lines a reading answer is put back into (``_as_written``)
                "counted": counted}  # not shown: whether a count may be 0 (``_count_search``)

    def _category(self, image: Image.Image, question: str, findings: dict) -> tuple[str, str] | None:
        """(name, evidence) for a question that asks which kind of a category ("What insect is on the leaf?"),
        where the classifier's labels that are kinds of it (WordNet) hold ``category_score`` of the image, named
        at the level asked (``imagenet.category_names``: ringlet and monarch are "butterfly"); else None. The
        detector's classes and the LLM's guess otherwise stand in for what the classifier saw."""
        category = frame.category if (frame := self._frame(question)) is not None else None
        tb = self.ctx.toolbox
        if category is None or tb is None or not tb.has("classifier"):
            return None
        index = imagenet.class_index()
        labels = tb.backend("classifier").classify([image], top_k=self.category_top_k)[0]
        pairs = [(index[ls.label.lower()], ls.score) for ls in labels if ls.label.lower() in index]
        named = imagenet.category_names(pairs, category)
        if not named or named[0][1] < self.category_score:
            return self._category_region(image, category, findings)
        seen = ", ".join(f"{ls.label} {ls.score:.2f}" for ls in labels[:5])
        return named[0][0], (f"The classifier saw {seen}; as kinds of {category}: "
                             + ", ".join(f"{n} {m:.2f}" for n, m in named[:3]))

    def _category_region(self, image: Image.Image, category: str, findings: dict) -> tuple[str, str] | None:
        """:meth:`_category` where the whole photo's labels fall short of ``category_score``: a small thing (a ball on
        a shelf) is a small share of the whole photo's view. The classifier's own region for the category
        (``localize``: where it sees its likeliest kind, classified again on that region alone), its label named at
        the level asked where the region's kinds of the category hold ``category_score`` of it; else None. Not where
        the detector found a kind of the category: its class already names the thing at a level a person answers
        with (a bus), where a region's label may be another thing's."""
        classifier = self.ctx.toolbox.backend("classifier")
        if not isinstance(classifier, Localizer):
            return None
        detected = [o["label"] for o in (findings.get("relevant") or []) + (findings.get("objects") or [])]
        if any(wn.word_is_a(label, category) for label in detected):
            return None
        index = imagenet.class_index()
        regions = [d for d in classifier.localize(image, category) if d.label.lower() in index]
        if not regions or regions[0].score < self.category_score:
            return None
        best = regions[0]
        named = imagenet.category_names([(index[best.label.lower()], best.score)], category)
        if not named:
            return None
        box = [int(v) for v in best.box.to_list(0)]
        return named[0][0], (f"The whole photo's classifier labels hold too little of any kind of {category}; its region at "
                             f"{box}, classified alone, is {best.label} ({best.score:.2f} for kinds of {category}), named "
                             f"as a kind of {category}: {named[0][0]}")

    def _subject_listed(self, question: str, relevant: list[dict]) -> bool:
        """Whether a detection among ``relevant`` (the things the question names) is of the frame's subject, the thing
        asked about, rather than only of the others it names ("the stool the man sits on": a person)."""
        frame = self._frame(question)
        if frame is None or not frame.subject:
            return bool(relevant)
        kinds = _subject_classes(frame, self._mapper)
        return any(o["label"] in kinds for o in relevant)

    def _searched(self, image: Image.Image, question: str) -> dict | None:
        """For a colour question about a thing the detector's listing does not hold ("What colour is the kite?"), the
        best box find()'s own search returns for the frame's subject (the detector asked for it by name, over tiles,
        then where the classifier sees a kind of it, else the detector's likeliest box of its class: ``look_for`` with
        ``presumed``), with colours measured on that box's object pixels, as a listed object's are. None for a part
        of a named whole (``_part`` measures it), a patch already cropped to one thing (its own pixels are the
        thing's), or when the search finds nothing or only the whole patch."""
        frame = self._frame(question)
        if frame is None or not frame.subject or frame.whole or is_object_crop(image):
            return None
        # "What colour is the kite?" takes the kite as there (as a referring expression does): where no detection
        # clears the threshold, the detector's likeliest box of its class beats the whole patch's colours
        dets, _ = self.ctx.toolbox.look_for(image, frame.subject, presumed=True)
        if not dets or dets[0].box.area >= 0.9 * image.width * image.height:
            return None
        d = dets[0]
        box = [int(v) for v in d.box.to_list(0)]
        colors = _named(self.ctx.toolbox.colors(object_crop(image, Box(*box)), foreground=True))
        return {"label": d.label, "score": d.score, "box": box, "colors": colors} if colors else None

    def _holders(self, image: Image.Image, question: str, frame: Any, found: list[dict]) -> tuple[set[str], list[dict]]:
        """(the detector classes of the frame's subject, the detections of it a question of holding is about): the one the
        question's cue picks (a place, a colour worn: ``choose``), else the largest, or all of them for a plural
        subject ("what are the girls carrying?"); a patch cropped to one thing, where none is found in it, is the one."""
        kinds = set(self._mapper.map(frame.subject).classes)
        holders = [o for o in found if o["label"] in kinds]
        if not holders and is_object_crop(image):
            return kinds, [{"label": frame.subject, "box": [0, 0, image.width, image.height]}]
        if len(holders) < 2:
            return kinds, holders
        boxes = [o["box"] for o in holders]
        told = choose_ops.cue(question)
        picked = choose_ops.choose(told, boxes, lambda: [object_crop(image, Box(*b)) for b in boxes]) if told else None
        head = frame.subject.split()[-1]
        if picked is not None:
            return kinds, [holders[picked]]
        if wn.singular(head) != head:
            return kinds, holders
        return kinds, [max(holders, key=lambda o: Box(*o["box"]).area)]  # one asked about, nothing tells: the most prominent

    def _held(self, image: Image.Image, question: str, findings: dict) -> tuple[str, str] | None:
        """(answer, evidence) for a question of what a found thing holds or carries (the frame's ``held``):

        - open ("What is the woman on the left carrying?"): the most confident other detection whose box a holder's box
          holds (``companion.held_by``) and that may be held (``wordnet.holdable``: not the chair one sits on, not the
          tie one wears); None when there is none (the LLM answers from the findings);
        - yes/no naming the thing ("Is the girl holding a kite?", the frame's ``held_thing``): "yes" when find()'s own
          search (``look_for``) finds it where a holder's box holds it, "no" when the search finds it elsewhere only or
          is one whose empty result settles it (``search_settles``); None when no tool can tell.

        The holders are :meth:`_holders`; none found: None."""
        frame = self._frame(question)
        if frame is None or not frame.held or not frame.subject or frame.negated or frame.kind not in ("open", "yesno"):
            return None
        if frame.kind == "yesno" and frame.held_thing is None:
            return None
        found = findings["relevant"] + findings["objects"]
        kinds, chosen = self._holders(image, question, frame, found)
        if not chosen:
            return None
        at = ", ".join(str(h["box"]) for h in chosen)
        if frame.kind == "yesno":
            dets, meta = self.ctx.toolbox.look_for(image, frame.held_thing)
            if not dets:
                return ("no", f"find({frame.held_thing!r}) found none") if search_settles(0, meta) else None
            boxes = [[int(v) for v in d.box.to_list(0)] for d in dets]
            held_boxes = {i for h in chosen for i in companion_ops.held_by(h["box"], boxes)}
            said = ", ".join(f"{d.label} at {b}" for d, b in zip(dets[:4], boxes))
            return ("yes" if held_boxes else "no"), (f"find({frame.held_thing!r}): {said}; "
                                                    f"{'in' if held_boxes else 'none in'} the {frame.subject}'s box at {at}")
        things = [o for o in found if o["label"] not in kinds and wn.holdable(o["label"])]
        held = list({id(things[i]): things[i] for h in chosen
                     for i in companion_ops.held_by(h["box"], [o["box"] for o in things])}.values())
        if not held:
            return None
        best = max(held, key=lambda o: o["score"])
        listed = ", ".join(f"{o['label']} {o['score']:.2f} at {o['box']}" for o in held[:4])
        return best["label"], f"Held by the {frame.subject} at {at}: {listed}"

    def _thing_name(self, image: Image.Image, asked: KnowledgeAsked, findings: dict) -> str | None:
        """What the tools call the thing a knowledge question points at ("this fruit" -> banana), where
        they say it with confidence and it says more than the question's own word: the best detected
        object of the kind it names ("this vehicle" -> truck; where the detector found none, what find()'s
        search found) at 0.5 or more, with no other kind close to it, else the classifier's first label at
        0.5 or more. None otherwise ("this tower": the classifier's first guess at 0.30; "this animal": cat
        and dog at 0.40 each)."""
        kinds = set(self._mapper.map(asked.head).classes) if asked.head else set()  # a bare "this": the main thing
        if kinds:
            found = [o for o in findings["relevant"] if o["label"] in kinds]  # best first
            if not found:  # the detector missed it: find()'s own search, the classifier where it knows the kind
                found = [{"label": d.label, "score": d.score} for d in self.ctx.toolbox.look_for(image, asked.head)[0]]
            rivals = [o for o in found[1:] if o["label"] != found[0]["label"] and o["score"] >= found[0]["score"] - 0.1]
            # cat 0.40 beside dog 0.40 on one crop: "this animal (dog)" made the answer a dog's
            name = found[0]["label"] if found and found[0]["score"] >= self.knowledge_score and not rivals else None
        else:
            top = findings["classified"][:1]
            name = top[0][0] if top and top[0][1] >= self.knowledge_score else None
        if name is None or name.lower() in {asked.head, (asked.head or "").rstrip("s"), "person"}:
            return None  # "this cat (cat)", "this woman (person)": nothing the question does not say
        return name

    def _search(self, image: Image.Image, question: str) -> dict | None:
        """For a presence question ("is there a yellow shape?"), the search for what it asks about, where
        it is evidence: what find() returned (stated first in the findings), or that a search over every
        pixel (outlines, colour regions) found none. None otherwise."""
        asked = asked_presence(question)
        if asked is None:
            return None
        dets, meta = self.ctx.toolbox.look_for(image, asked.thing)
        if not search_settles(len(dets), meta):
            # no tool can look for it, or the detector missed it: NanoDet missed a bicycle cut by the
            # frame and small boats far away, and "0 found" turned the LLM to "no"
            return None
        found = [f"{d.label} at {[int(v) for v in d.box.to_list(0)]}" for d in dets[:5]]
        return {"name": asked.thing, "count": len(dets), "found": found, "negated": asked.negated, "where": asked.where}

    def _part(self, image: Image.Image, question: str, dets: Sequence[Any]) -> dict | None:
        """For a colour question about a part of a thing the question names ("the parrot's beak", "the handle of the
        mug": the frame's ``subject`` and ``whole``) that no detection locates itself: the part, the whole and the
        whole's colours down to :data:`_PART_FLOOR` (:func:`_part_colors`), measured on the whole's best detection
        (its likeliest box, which the question presumes there, where none clears the threshold), else on the patch
        where it is a crop (a program's patch of the whole). A part is a small share of its whole,
        so the whole's main colours, which the answer is otherwise kept to, leave its own colour out. None otherwise."""
        frame = self._frame(question)
        if frame is None or not frame.whole or not frame.subject:
            return None
        own = _subject_classes(frame, self._mapper)
        if any(d.label in own for d in dets):
            return None  # the thing asked about is found itself ("the man's bicycle"): its own colours answer
        wholes = set(self._mapper.map(frame.whole).classes)
        found = next((d for d in dets if d.label in wholes), None)
        if found is None and not is_object_crop(image):  # the question takes the whole as there too
            # a whole no detector class names ("the tiger's nose") is looked for as find() would: the classifier's
            # region for it, whatever its label
            presumed = self.ctx.toolbox.look_for(image, frame.whole, presumed=True)[0]
            found = next((d for d in presumed if d.label in wholes or not wholes), None)
            if found is None:
                return None  # the whole is not located either: nothing to measure the part within
        label = found.label if found is not None else frame.whole
        colors = _part_colors(image, [int(v) for v in found.box.to_list(0)] if found is not None else None)
        return {"part": frame.subject, "whole": label, "colors": colors} if colors else None

    def _standout_other(self, question: str, classified: Sequence[Any]) -> str | None:
        """The classifier's top label where it names what stands out in the photo as no kind of the thing the colour
        question asks about (the subject, or the whole it is part of): "the pond" of a photo the classifier calls
        "mallard" is not the duck that stands out from the water. None where a label could be that thing, the
        classifier is unsure (under ``category_score``), or there is no frame."""
        frame = self._frame(question)
        if frame is None or not frame.subject or not classified or classified[0].score < self.category_score:
            return None
        heads = [wn.singular(phrase.split()[-1]) for phrase in (frame.subject, frame.whole) if phrase]
        labels = [ls.label for ls in classified]
        if any(wn.could_be_a(label, head) or label == head for label in labels for head in heads):
            return None
        return labels[0]

    def _frame(self, question: str) -> Any:
        """The question's frame, where the context reads questions (``ToolContext.read_question``); else None."""
        return self._frames(question) if self.ctx.read_question is not None else None

    def _count_search(self, image: Image.Image, question: str) -> dict | None:
        """For a count question, find()'s search for what it counts (the frame's ``count``): how many came back and
        whether that result ``settles`` anything (``search_settles``: something found, or none found by a search
        over every pixel). A name no tool can look for, or the detector's miss (NanoDet misses small, far or
        cut-off things), does not: a 0 from the LLM would rest on nothing, as the ``unfounded_negative``
        check says of a program's. None without a frame or a counted thing."""
        frame = self._frame(question)
        if frame is None or not frame.count:
            return None
        name = " ".join(frame.count)
        dets, meta = self.ctx.toolbox.look_for(image, name)
        return {"name": name, "count": len(dets), "settles": search_settles(len(dets), meta)}

    def _worn(self, image: Image.Image, question: str, kind: str, people: list,
              found_faces: Callable[[], list[list[float]]]) -> dict | None:
        """For a question about clothing ("what is he wearing on his feet?"), the classifier's garment
        classes on that body part of each person (the placed one first, else by detector score), and
        for a colour question that part's colours. None when the question names no garment."""
        part, tb = garment_ops.worn_part(question), self.ctx.toolbox
        # no count: weak scores miss garments, and a count of neckties came out 1 for 2
        if part is None or kind == "number" or not people or self.worn_people <= 0 or not tb.has("classifier"):
            return None
        largest = max(d.box.area for d in people)
        people = [d for d in people if d.box.area >= 0.15 * largest]  # a sliver at the edge shows no garment
        where = placement_ops.placement(question)
        placed = where is not None and len(people) > 1
        if placed:
            first = placement_ops.pick([d.box.to_list(0) for d in people], where)
            people = [people[first], *people[:first], *people[first + 1:]]
        faces = found_faces()
        items, crops = [], []
        for d in people[: self.worn_people]:
            person = d.box.to_list(0)
            box = garment_ops.part_box(person, part, garment_ops.face_of(person, faces), image.size)
            if box is not None:
                items.append({"person": [int(v) for v in person], "box": box})
                crops.append(object_crop(image, Box(*box)))
        if not items:
            return None
        color = kind == "color"
        for item, guesses, crop in zip(items, tb.backend("classifier").classify(crops, top_k=1000), crops):
            named: dict[str, str] = {}
            for g in guesses:  # best first; a garment worn elsewhere ("Windsor tie" on a face crop) is skipped
                name = garment_ops.garment(g.label, part)
                if g.score < 0.02 or len(named) == 2:
                    break
                if name is not None and name not in named:
                    named[name] = f"{name} {g.score:.2f}" if name == g.label.lower() else f"{name} ({g.label}) {g.score:.2f}"
            item["garments"] = list(named.values())
            item["colors"] = _named(tb.colors(crop, foreground=True)) if color else []
        if kind in ("color", "choice") and (frame := self._frame(question)) and hair_ops.names_hair(frame.subject):
            for item in items:  # hair is named on its own scale (blonde, not orange), read over the face
                face = garment_ops.face_of(item["person"], faces)
                item["hair"] = hair_ops.read_hair(image, face) if face is not None else None
        # placed: the question names which person ("the man on the right"), listed first
        return {"part": part, "people": items, "colors": color, "placed": placed and items[0]["person"] == [int(v) for v in people[0].box.to_list(0)]}

    def _shapes(self, image: Image.Image, question: str) -> tuple[list[dict] | None, list[list[int]]]:
        """Outlines measured in the pixels, when the question names a shape or a round thing ("what is
        the red shape?", "how many coins?"): kind, box and the colours inside each (the first few), as
        listed (at most max_objects), and the boxes of all of them."""
        tb = self.ctx.toolbox
        if not tb.config.shapes:
            return None, []
        kinds = tuple(dict.fromkeys(k for w in re.findall(r"[a-z]+", question.lower()) for k in shape_ops.shape_kinds(w)))
        if not kinds:
            return None, []
        out = []
        hits = shape_ops.find_shapes(image, kinds)
        for i, hit in enumerate(hits[: self.max_objects]):
            item = {"kind": hit.kind, "box": [int(v) for v in hit.box.to_list(0)], "colors": []}
            if i < 3:
                crop = object_crop(image, Box(*item["box"]))
                item["colors"] = _named(tb.colors(crop, foreground=True), 0.2)
            out.append(item)
        return out, [[int(v) for v in h.box.to_list(0)] for h in hits]  # all of them: rows group every one

    def _shots(self) -> list:
        """System prompt and the YAML few-shot examples as earlier chat turns (a stable, cacheable prefix)."""
        if self._prefix is None:
            from hydra_vr.llm.base import ChatMessage

            msgs = [ChatMessage("system", render_prompt("vqa_describe_system"))]
            for ex in load_examples("describe")["examples"]:
                f = {"relevant": [], "objects": [], "labels": [], "colors": [], "subject_colors": None, "standout": None,
                     "texts": None,
                     "faces": None, "shapes": None, "shapes_total": 0, "rows": None, "search": None, "worn": None, "background": False,
                     "part": None,
                     "texts_by_size": False} | ex["findings"]
                spec = expected_type(ex["question"])
                f["unchecked"] = _unchecked(spec.kind, f["search"])
                msgs += [ChatMessage("user", render_prompt("vqa_describe_user", **f, question=ex["question"], expected=spec.describe())),
                         ChatMessage("assistant", json.dumps({"answer": str(ex["answer"])}))]
            self._prefix = msgs
        return self._prefix

    def answer(self, image: Image.Image, question: str) -> Answer:
        if self.ctx.llm is None:
            raise RuntimeError("the 'describe' VQA backend needs an LLM; configure llm in the config or choose a VQA model")
        from hydra_vr.llm.base import ChatMessage
        from hydra_vr.llm.typed import TypedReply, ask_typed

        spec = expected_type(question)
        findings = self.describe(image, question)
        user = render_prompt("vqa_describe_user", **findings, expected=spec.describe())
        search = findings["search"]
        asked = asked_knowledge(question)
        held = self._held(image, question, findings) if asked is None else None
        if held is not None:  # "what is he holding?", "is she holding a kite?": the holder's box and the thing's decide
            return Answer(text=held[0], source="describe:held", evidence=f"{user}\n{held[1]}")
        hair = next((p for p in (findings["worn"] or {}).get("people", []) if p.get("hair")), None)
        said = hair and (hair["hair"].name if spec.kind == "color" else hair_ops.option_named(spec.options, hair["hair"].name))
        if said:  # "what colour is her hair?": the measured shade, named as hair is (a small model said "pink" of the face)
            return Answer(text=said, source="describe:hair", evidence=f"{user}\nThe person at {hair['person']}: {hair['hair'].evidence()}")
        # A presence question the tools searched: their result decides, not the LLM (a small model said "yes"
        # beside "0 found"), where it is evidence: something found (unless the question places it: "on
        # the table?"), or nothing found by a search over every pixel. A detector's miss is no search.
        decisive = search is not None and (search["count"] == 0 or not search["where"])
        if decisive and spec.kind == "yesno":
            present = search["count"] > 0
            return Answer(text="yes" if present != search["negated"] else "no", source="describe:search", evidence=user)
        if self.yesno_prior is not None and asked is None and _nothing_bears(findings, question):
            return Answer(text=self.yesno_prior, source="describe:prior",
                          evidence=f"{user}\nNo finding bears on it: answered with the yes/no prior, {self.yesno_prior!r}")
        named_kind = self._category(image, question, findings) if spec.kind == "open" and asked is None else None
        if named_kind is not None:  # "what insect is this?": the classifier's labels named at the level asked
            return Answer(text=named_kind[0], source="describe:category", evidence=f"{user}\n{named_kind[1]}")
        name = self._thing_name(image, asked, findings) if asked else None
        if asked and name:
            # What is known of the thing, asked of the LLM's knowledge with the thing named and no findings
            # beside it (there, a small model answered against what it knew of the thing): ViperGPT's
            # simple_query + llm_query. What WordNet says the thing is goes with it: a small model's own
            # knowledge of a named thing is thin, a dictionary's gloss is not a guess.
            named, gloss = asked.naming(name), imagenet.definition(name)
            prompt = render_prompt("knowledge_user", question=named, thing=name, gloss=gloss, expected=spec.describe())
            reply = ask_typed(self.ctx.llm(), [ChatMessage("system", render_prompt("knowledge_system")),
                                               ChatMessage("user", prompt)],
                              spec, max_tokens=self.max_tokens, retries=self.retries)
            if reply.answer is not None:
                return Answer(text=reply.answer, source="describe:knowledge", evidence=f"{user}\nAsked from knowledge: {prompt}")
        if findings["counted"] is not None and not findings["counted"]["settles"]:
            spec = dataclasses.replace(spec, least=1)  # "how many" presumes the thing; no search said there is none
        asked_options = spec.options
        if spec.kind == "color" and (seen := _colors_seen(findings)):
            spec = dataclasses.replace(spec, options=seen)  # from the findings, not from knowledge: what was measured
        elif (spec.kind == "choice" and spec.options and all(color_ops.is_color_name(o) for o in spec.options)
              and (kept := _measured_options(spec.options, _colors_seen(findings)))):
            spec = dataclasses.replace(spec, options=kept)  # "green or yellow?" of a thing measured yellow: not green
        # the answer checks that need no tool calls, the frame's own: "which utensil?" -> "cup" is re-asked here, not
        # refused after the fact and asked again of this same backend by the last resort
        frame = self._frame(question)
        refusals = [r for r in (_echoed_label(findings, spec), getattr(frame, "off_category", None)) if r is not None]
        refuse = (lambda a: next((why for r in refusals if (why := r(a))), None)) if refusals else None

        def pick(prompt: str, expected: AnswerSpec) -> TypedReply:  # the findings' question, asked with the few-shot prefix
            return ask_typed(self.ctx.llm(), [*self._shots(), ChatMessage("user", prompt)], expected,
                             max_tokens=self.max_tokens, retries=self.retries, refuse=refuse)

        reply = pick(user, spec)
        # not "... Answer yes or no." (verify_property's, parsed as a choice of yes and no): no order to check, and
        # left to the LLM (the yes/no prior there was measured worse: docs/RESULTS.md, session 44)
        if (self.choice_prior is not None and spec.kind == "choice" and spec.options == asked_options
                and set(spec.options) != {"yes", "no"} and reply.answer is not None
                and (turned := _options_reversed(question, spec.options)) is not None):
            turned_spec = dataclasses.replace(spec, options=spec.options[::-1])
            again = pick(render_prompt("vqa_describe_user", **(findings | {"question": turned}), expected=turned_spec.describe()),
                         turned_spec)
            said = f"Asked as {turned!r}: {again.answer!r}; as written: {reply.answer!r}."
            if again.answer is not None and again.answer != reply.answer:
                return Answer(text=spec.options[0], source="describe:order",
                              evidence=f"{user}\n{said} The pick follows the options' order, not the findings: the first option as written.")
            user = f"{user}\n{said}"
        written = _as_written(reply.answer, findings["read"]) if reply.answer is not None and asks_to_read(question) else None
        if written is not None:
            return Answer(text=written, source="describe:ocr", evidence=f"{user}\nAnswered {reply.answer!r}: as read, {written!r}")
        # No fitting answer after the re-ask: return what was said; the loop's checks refuse it.
        return Answer(text=reply.answer if reply.answer is not None else reply.raw, source="describe", evidence=user)
