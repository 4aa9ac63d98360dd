"""Structured results of vision tools. Boxes are top-left origin ``[x1, y1, x2, y2]`` pixels.

Tools return these; the textualizer (hydra_vr.memory) turns them into text. They are plain
dataclasses so they pickle cheaply across the sandbox boundary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

# Key in a PIL image's ``info`` marking a patch cropped to an object (an ImagePatch smaller than the
# image): its outline runs along the patch edge, which tools measuring outlines must know.
OBJECT_CROP = "hydra_vr.object_crop"


# Key marking which sides (left, top, right, bottom) of such a crop lie on its photo's frame: there the
# object is cut by the frame, so the strip along that side is the object, not its background.
FRAME_SIDES = "hydra_vr.frame_sides"
Sides = tuple[bool, bool, bool, bool]
NO_SIDES: Sides = (False, False, False, False)
_FRAME_TOLERANCE = 0.02  # a box side within 2% of the frame (or 2 px) lies on it: detectors stop a few px short


def mark_object_crop(image: Any, on_frame: Sides = NO_SIDES) -> Any:
    """Mark ``image`` (a PIL image) as the crop of one object's box, ``on_frame`` saying which of its
    sides (left, top, right, bottom) lie on its photo's frame; returns it."""
    image.info[OBJECT_CROP] = True
    # with the size: PIL copies ``info`` into a crop of this crop, whose sides these are not
    image.info[FRAME_SIDES] = (tuple(bool(s) for s in on_frame), image.size)
    return image


def is_object_crop(image: Any) -> bool:
    return bool(getattr(image, "info", {}).get(OBJECT_CROP))


def frame_sides(image: Any) -> Sides:
    """Which sides of ``image`` lie on its photo's frame: all of a whole photo's, the marked ones of a crop
    (none of a crop whose sides were not worked out)."""
    info = getattr(image, "info", {})
    if not info.get(OBJECT_CROP):
        return (True, True, True, True)
    sides, size = info.get(FRAME_SIDES, (NO_SIDES, None))
    return tuple(sides) if size == image.size else NO_SIDES  # type: ignore[return-value]


def sides_on_frame(box: Box, width: float, height: float, outer: Sides = (True, True, True, True)) -> Sides:
    """Which sides of ``box`` (pixels of a ``width`` x ``height`` image) lie on the image's sides that are
    themselves on the photo frame (``outer``: all, for a whole photo)."""
    tx, ty = max(2.0, _FRAME_TOLERANCE * width), max(2.0, _FRAME_TOLERANCE * height)
    near = (box.x1 <= tx, box.y1 <= ty, box.x2 >= width - tx, box.y2 >= height - ty)
    return tuple(n and o for n, o in zip(near, outer))  # type: ignore[return-value]


def object_crop(image: Any, box: Box) -> Any:
    """The crop of ``image`` (a PIL image, itself a photo or a crop) to one object's ``box``, marked so,
    with the sides of it that lie on the photo's frame."""
    crop = image.crop((int(box.x1), int(box.y1), int(round(box.x2)), int(round(box.y2))))
    return mark_object_crop(crop, sides_on_frame(box, image.width, image.height, frame_sides(image)))


@dataclass(frozen=True)
class Box:
    x1: float
    y1: float
    x2: float
    y2: float

    def __post_init__(self) -> None:
        # Backends hand over numpy scalars; keep plain floats so results serialise as JSON.
        for name in ("x1", "y1", "x2", "y2"):
            object.__setattr__(self, name, float(getattr(self, name)))

    @property
    def width(self) -> float:
        return max(0.0, self.x2 - self.x1)

    @property
    def height(self) -> float:
        return max(0.0, self.y2 - self.y1)

    @property
    def area(self) -> float:
        return self.width * self.height

    @property
    def center(self) -> tuple[float, float]:
        return ((self.x1 + self.x2) / 2, (self.y1 + self.y2) / 2)

    def to_list(self, ndigits: int | None = 1) -> list[float]:
        vals = [self.x1, self.y1, self.x2, self.y2]
        return [round(v, ndigits) if ndigits is not None else v for v in vals]

    def shift(self, dx: float, dy: float) -> Box:
        return Box(self.x1 + dx, self.y1 + dy, self.x2 + dx, self.y2 + dy)

    def clip(self, width: float, height: float) -> Box:
        return Box(
            min(max(self.x1, 0.0), width),
            min(max(self.y1, 0.0), height),
            min(max(self.x2, 0.0), width),
            min(max(self.y2, 0.0), height),
        )

    def intersection(self, other: Box) -> float:
        w = min(self.x2, other.x2) - max(self.x1, other.x1)
        h = min(self.y2, other.y2) - max(self.y1, other.y1)
        return max(0.0, w) * max(0.0, h)

    def iou(self, other: Box) -> float:
        inter = self.intersection(other)
        union = self.area + other.area - inter
        return inter / union if union > 0 else 0.0

    @classmethod
    def from_xywh(cls, x: float, y: float, w: float, h: float) -> Box:
        return cls(x, y, x + w, y + h)


@dataclass(frozen=True)
class Detection:
    """One located object. ``label`` is the model's class; ``query`` the name asked for."""

    box: Box
    label: str
    score: float
    source: str  # which backend found it: "nanodet", "faces", "ocr", "owlv2", ...
    query: str = ""
    text: str | None = None  # OCR detections carry the text read

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["box"] = self.box.to_list()
        d["score"] = round(self.score, 4)
        return d


def one_box_per_thing(dets: Sequence[Detection], iou: float) -> list[Detection]:
    """``dets`` (best first) less each that covers the same pixels (IoU >= ``iou``) as a better one found for the same
    query. A detector's NMS runs per class, so a name of several classes ("vehicle": car, truck, ...) came back with one
    thing under two of them (a truck also scored as a car), and a count of vehicles took it for two. Within one class
    NMS has already kept one box; across queries ("cat", "dog") each name keeps its own."""
    kept: list[Detection] = []
    for d in dets:
        if all(k.query != d.query or k.box.iou(d.box) < iou for k in kept):
            kept.append(d)
    return kept


@dataclass(frozen=True)
class TextRegion:
    box: Box
    text: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"box": self.box.to_list(), "text": self.text, "score": round(self.score, 4)}


@dataclass(frozen=True)
class LabelScore:
    label: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "score": round(self.score, 4)}


@dataclass(frozen=True)
class ColorShare:
    """A named colour and the fraction of the patch's (foreground-weighted) pixels it covers."""

    name: str
    fraction: float
    rgb: tuple[int, int, int]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "fraction": round(self.fraction, 4), "rgb": list(self.rgb)}


@dataclass(frozen=True)
class Answer:
    """An answer from a VQA-like tool, with the evidence it used (for traces and the textualizer)."""

    text: str
    source: str
    evidence: str = ""
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Reply(str):
    """The text ``simple_query`` returns, whose truth is a yes/no answer's: "no" is false.

    Programs a small model writes test a yes/no reply as a flag (``"modern" if modern else "traditional"``,
    ``if patch.simple_query("Is ...?"):``), which a plain "no" passes; 3 of the labelled set's 124 VQA
    programs did. Everything else is a plain ``str``; it crosses the sandbox boundary as one.
    """

    __slots__ = ()

    def __bool__(self) -> bool:
        return bool(self.strip()) and self.strip().lower() not in ("no", "no.")


@dataclass
class ToolCallRecord:
    """One vision-tool call as seen by the API; kept so the textualizer can report it."""

    tool: str
    args: dict[str, Any]
    result: Any
    ms: float
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The call as trace JSON, enough to run the answer checks on it again offline: detections and answers
        keep their fields, other results their plain value (or repr), meta its plain values."""
        return {"tool": self.tool, "args": _plain(self.args), "result": _result_dict(self.result),
                "ms": round(self.ms, 1), "meta": _plain(self.meta)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCallRecord:
        """A call back from :meth:`to_dict` (detections and answers as objects again)."""
        result = data.get("result")
        if isinstance(result, dict) and result.get("type") == "detections":
            result = [Detection(Box(*d["box"]), d["label"], float(d["score"]), d.get("source", ""), d.get("query", ""),
                                d.get("text")) for d in result["items"]]
        elif isinstance(result, dict) and result.get("type") == "answer":
            result = Answer(result["text"], result.get("source", ""), result.get("evidence", ""), result.get("score"))
        return cls(str(data["tool"]), dict(data.get("args") or {}), result, float(data.get("ms") or 0.0),
                   dict(data.get("meta") or {}))


def _plain(value: Any) -> Any:
    """``value`` with only JSON types (anything else as its repr)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    to_dict = getattr(value, "to_dict", None)
    return _plain(to_dict()) if callable(to_dict) else repr(value)


def _result_dict(result: Any) -> Any:
    if isinstance(result, (list, tuple)) and result and all(isinstance(r, Detection) for r in result):
        return {"type": "detections", "items": [r.to_dict() for r in result]}
    if isinstance(result, Answer):
        return {"type": "answer", **result.to_dict()}
    return _plain(result)
