"""ImagePatch: the API that generated programs call. Its docstrings are the reasoner's prompt.

Coordinates are pixels of the ORIGINAL image with the origin at the top-left corner: x grows to
the right, y grows downwards, and a box is ``[x1, y1, x2, y2]`` (x1 < x2, y1 < y2).

An ImagePatch class is bound to a toolbox with :func:`bind_toolbox`; there is no global model
state, so two toolboxes (say, two configs) can be used side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from hydra_vr.api.names import PRONOUNS, beside_what
from hydra_vr.api.types import Box, Detection, Reply, object_crop

if TYPE_CHECKING:
    from hydra_vr.api.toolbox import VisionToolbox


class ImageLoadError(ValueError):
    """The image could not be read (missing file, not an image, empty)."""


def load_image(source: Any) -> Image.Image:
    """An RGB PIL image from a path, ``sample:NAME`` (a packaged photo), PIL image or HxWx3 uint8 array;
    EXIF rotation applied."""
    if isinstance(source, Image.Image):
        img = source
    elif isinstance(source, (str, Path)):
        from hydra_vr.assets import SampleImageError, resolve_image

        try:
            path = resolve_image(source)
        except SampleImageError as exc:
            raise ImageLoadError(str(exc)) from exc
        if not path.is_file():
            raise ImageLoadError(f"image file not found: {path}")
        try:
            with Image.open(path) as opened:
                img = ImageOps.exif_transpose(opened)
                img.load()
        except (UnidentifiedImageError, OSError) as exc:
            raise ImageLoadError(f"cannot read image {path}: {exc}") from exc
    elif isinstance(source, np.ndarray):
        arr = source
        if arr.ndim == 2:
            arr = np.stack([arr] * 3, axis=-1)
        if arr.ndim != 3 or arr.shape[2] not in (3, 4):
            raise ImageLoadError(f"expected an HxWx3 array, got shape {arr.shape}")
        if arr.dtype != np.uint8:
            arr = np.clip(arr * (255.0 if arr.max() <= 1.0 else 1.0), 0, 255).astype(np.uint8)
        img = Image.fromarray(arr)
    else:
        raise ImageLoadError(f"cannot make an image from {type(source).__name__}")
    if img.width == 0 or img.height == 0:
        raise ImageLoadError("image is empty (0 pixels)")
    return img if img.mode == "RGB" else img.convert("RGB")


class ImagePatch:
    """A rectangular region of an image, with methods that look at it through vision tools.

    Coordinates are pixels of the original image, origin at the top-left corner, y growing
    downwards. Attributes:
        x1, y1, x2, y2: the box of this patch (left, top, right, bottom).
        width, height: size of the patch in pixels.
        horizontal_center, vertical_center: centre of the patch.
        cropped_image: the pixels of this patch (a PIL image).
        original_image: the whole image the patch comes from.
        parent: the patch this one was found in or cropped from (None for the whole image).
        label, score: what the detector called it and how sure it was (None for the whole image).

    Example:
        >>> image_patch = ImagePatch(image)
        >>> image_patch.width, image_patch.height
        (640, 480)
    """

    _toolbox: ClassVar[VisionToolbox | None] = None

    def __init__(
        self,
        image: Any,
        x1: float | None = None,
        y1: float | None = None,
        x2: float | None = None,
        y2: float | None = None,
        *,
        parent: ImagePatch | None = None,
        label: str | None = None,
        score: float | None = None,
    ) -> None:
        """Make a patch of ``image`` (the whole image unless a box ``x1, y1, x2, y2`` is given)."""
        self.original_image = load_image(image)
        w, h = self.original_image.size
        box = Box(
            0.0 if x1 is None else float(x1),
            0.0 if y1 is None else float(y1),
            float(w) if x2 is None else float(x2),
            float(h) if y2 is None else float(y2),
        ).clip(w, h)
        if box.width < 1 or box.height < 1:
            raise ValueError(f"empty patch box {box.to_list()} for an image of {w}x{h}")
        self.x1, self.y1, self.x2, self.y2 = box.x1, box.y1, box.x2, box.y2
        self.parent = parent
        self.label = label
        self.score = score
        self._crop: Image.Image | None = None

    # ----------------------------------------------------------------- geometry
    @property
    def box(self) -> list[float]:
        """The box ``[x1, y1, x2, y2]`` in original-image pixels."""
        return [round(float(v), 1) for v in (self.x1, self.y1, self.x2, self.y2)]

    @property
    def width(self) -> float:
        return self.x2 - self.x1

    @property
    def height(self) -> float:
        return self.y2 - self.y1

    @property
    def horizontal_center(self) -> float:
        return (self.x1 + self.x2) / 2

    @property
    def vertical_center(self) -> float:
        return (self.y1 + self.y2) / 2

    @property
    def area(self) -> float:
        return self.width * self.height

    @property
    def cropped_image(self) -> Image.Image:
        if self._crop is None:
            # an object's crop is marked so, with the sides the photo's frame cuts (colours read the object so)
            self._crop = (object_crop(self.original_image, self._box()) if self._is_object()
                          else self.original_image.crop((int(self.x1), int(self.y1), int(round(self.x2)), int(round(self.y2)))))
        return self._crop

    def _box(self) -> Box:
        return Box(self.x1, self.y1, self.x2, self.y2)

    def _is_object(self) -> bool:
        # Any patch smaller than the whole image is read as an object in its box: its colours come
        # from the object's own pixels; the whole image is a scene and keeps every pixel.
        w, h = self.original_image.size
        return not (self.x1 <= 0 and self.y1 <= 0 and self.x2 >= w and self.y2 >= h)

    def _child(self, box: Box, label: str | None = None, score: float | None = None) -> ImagePatch:
        # Children share the original image and the bound toolbox (type(self)).
        child = type(self).__new__(type(self))
        child.original_image = self.original_image
        b = box.clip(*self.original_image.size)
        child.x1, child.y1, child.x2, child.y2 = b.x1, b.y1, b.x2, b.y2
        child.parent, child.label, child.score, child._crop = self, label, score, None
        return child

    @classmethod
    def _tools(cls) -> VisionToolbox:
        if cls._toolbox is None:
            raise RuntimeError("this ImagePatch class has no vision tools: use `ImagePatch = hydra_vr.load()` "
                               "(the default profile) or bind_toolbox(toolbox)")
        return cls._toolbox

    def __repr__(self) -> str:
        tag = f" {self.label!r}" if self.label else ""
        return f"ImagePatch{tag}({self.x1:.0f}, {self.y1:.0f}, {self.x2:.0f}, {self.y2:.0f})"

    # --------------------------------------------------------------- API proper
    def find(self, object_name: str, *, presumed: bool = False) -> list[ImagePatch]:
        """Return patches of every ``object_name`` found inside this patch, most confident first.

        Returns an empty list when there is none. Shapes ("circle", "triangle", "rectangle") and round
        things (coins, wheels) are found by their outline.
        Examples:
            >>> # how many dogs are there?
            >>> dogs = image_patch.find("dog")
            >>> answer = str(len(dogs))
            >>> # the text on the sign
            >>> signs = image_patch.find("text")
        """
        # presumed (not in the prompt: keyword-only): grounding's last resort, the thing is known to be there
        return self._patches(self._tools().find(self.cropped_image, object_name, presumed), object_name)

    def standout(self) -> list[ImagePatch]:
        """Return the region of this patch that stands out from its border by colour (an empty list if none).

        Not in the reasoner's API: grounding's fallback program asks it when no name of the expression
        finds anything (the thing is there; a photo of one subject shows it as what stands out)."""
        return self._patches(self._tools().standout(self.cropped_image), "region standing out")

    def _patches(self, dets: Sequence[Detection], name: str) -> Patches:
        """Child patches of detections in this patch's own pixels (boxes shifted into the original's)."""
        return Patches((self._child(d.box.shift(self.x1, self.y1), label=d.label, score=d.score) for d in dets), name)

    def exists(self, object_name: str) -> bool:
        """Return True if at least one ``object_name`` is in this patch.

        Example:
            >>> # is there a cat?
            >>> answer = bool_to_yesno(image_patch.exists("cat"))
        """
        return len(self.find(object_name)) > 0

    def verify_property(self, object_name: str, property: str) -> bool:
        """Return True if the ``object_name`` in this patch has ``property`` (a colour, material, state...).

        Colours are measured from the object's own pixels. Use it on a patch that holds the object.
        Example:
            >>> # is the bus red?
            >>> bus = image_patch.find("bus")[0]
            >>> answer = bool_to_yesno(bus.verify_property("bus", "red"))
        """
        part = self._box() if self._is_object() else None  # how big the thing is in its photo
        verdict, _ = self._tools().verify_property(self.cropped_image, object_name, property, part is not None, part,
                                                   self.original_image.size)
        return bool(verdict)

    def best_text_match(self, option_list: list[str]) -> str:
        """Return the option from ``option_list`` that best describes this patch.

        Example:
            >>> # what colour is the car, red or blue?
            >>> car = image_patch.find("car")[0]
            >>> answer = car.best_text_match(["red", "blue"])
        """
        return self._tools().best_text_match(self.cropped_image, list(option_list), self._is_object())

    def simple_query(self, question: str) -> str:
        """Answer a simple question about this patch (what kind, what colour, what is written...).

        Ask about one thing at a time; harder questions should be split into steps with find().
        Example:
            >>> # what is the man holding?
            >>> man = image_patch.find("man")[0]
            >>> answer = man.simple_query("What is the man holding?")
        """
        part = self._box() if self._is_object() else None  # where a part lies in the photo ("on the left?")
        if part is not None and self._beside_me(question):
            # a question about what is behind or beside this patch's thing, asked of its crop: the crop holds
            # the thing itself, not its surroundings, so the whole photo answers
            return Reply(self._tools().simple_query(self.original_image, question).text)
        return Reply(self._tools().simple_query(self.cropped_image, question, part, self.original_image.size).text)

    def _beside_me(self, question: str) -> bool:
        """Whether ``question`` asks about a thing beside, behind or in front of this patch's own thing."""
        other = beside_what(str(question))
        if other is None:
            return False
        if other in PRONOUNS:  # "behind her" of a person's crop; "behind it" of anything's
            return other in ("it", "itself") or (self.label or "").lower() == "person"
        return self._tools().names_label(other.split()[-1], self.label)

    def read_text(self) -> str:
        """Return the text written in this patch (OCR), words in reading order, '' if none.

        Example:
            >>> # what does the sign say?
            >>> answer = image_patch.read_text()
        """
        regions = self._tools().read_text(self.cropped_image)
        regions = sorted(regions, key=lambda r: (round(r.box.y1 / 20), r.box.x1))
        return " ".join(r.text for r in regions)

    def compute_depth(self) -> float:
        """Return the median depth of this patch: larger means farther from the camera.

        Example:
            >>> # which person is closest to the camera?
            >>> people = image_patch.find("person")
            >>> closest = min(people, key=lambda p: p.compute_depth())
        """
        return self._tools().depth(self.original_image, self._box())

    def is_blurry(self, background: bool = False) -> bool:
        """Return True if this patch is blurred or out of focus (motion blur included), measured from its pixels.

        On the whole image it says whether the photo itself is blurred. ``background=True`` asks about the
        photo's background (its border) instead of this patch.
        Examples:
            >>> # is the dog in focus?
            >>> dog = image_patch.find("dog")[0]
            >>> answer = bool_to_yesno(not dog.is_blurry())
            >>> # is the background blurry?
            >>> answer = bool_to_yesno(image_patch.is_blurry(background=True))
        """
        box = self._box() if self._is_object() else None
        focus = self._tools().focus(self.original_image, box, background)
        if focus is None:  # too little detail to measure (a plain wall, a tiny patch): the photo decides
            focus = self._tools().focus(self.original_image, None, False)
        return bool(focus is not None and focus.blurry)

    def crop(self, x1: float, y1: float, x2: float, y2: float) -> ImagePatch:
        """Return a sub-patch; ``x1, y1, x2, y2`` are pixels relative to this patch's top-left corner.

        Example:
            >>> # the left half of the image
            >>> left_half = image_patch.crop(0, 0, image_patch.width / 2, image_patch.height)
        """
        return self._child(Box(x1, y1, x2, y2).shift(self.x1, self.y1))

    def overlaps_with(self, x1: float, y1: float, x2: float, y2: float) -> bool:
        """Return True if this patch overlaps the box ``x1, y1, x2, y2`` (original-image pixels).

        Example:
            >>> # is the cup on the table?
            >>> cup, table = image_patch.find("cup")[0], image_patch.find("table")[0]
            >>> answer = bool_to_yesno(cup.overlaps_with(table.x1, table.y1, table.x2, table.y2))
        """
        return self._box().intersection(Box(x1, y1, x2, y2)) > 0

    def llm_query(self, question: str, long_answer: bool = True) -> str:
        """Ask a language model a question that needs world knowledge, not the image.

        Set ``long_answer=False`` for a short answer of a few words.
        Example:
            >>> # what country is this food from?
            >>> food = image_patch.find("food")[0].simple_query("What food is this?")
            >>> answer = image_patch.llm_query(f"Which country is {food} from?", long_answer=False)
        """
        return self._tools().llm_query(question, long_answer=long_answer)


# What a program may read on a patch: the public API plus the attributes __init__ sets.
PATCH_FIELDS: frozenset[str] = frozenset(
    {n for n in vars(ImagePatch) if not n.startswith("_")}
    | {"x1", "y1", "x2", "y2", "original_image", "parent", "label", "score"}
)


class Patches(list[ImagePatch]):
    """What ``find()`` returns: a list of patches, most confident first.

    Programs often treat the result as the one thing they asked for (``find("kettle").simple_query(...)``):
    a patch attribute read on the list is read on its first, most confident patch. On an empty list it
    raises, naming what was not found, so "nothing found" stays an error the program cannot hide.
    """

    __slots__ = ("query",)

    def __init__(self, patches: Any = (), query: str = "") -> None:
        super().__init__(patches)
        self.query = query

    def __getattr__(self, name: str) -> Any:  # only called for names a list does not have
        if name not in PATCH_FIELDS:
            raise AttributeError(f"'list' object has no attribute {name!r}")
        if not self:
            raise AttributeError(f"find({self.query!r}) found nothing, so the empty list has no {name!r}: "
                                 "check `if patches:` before using patches[0]")
        return getattr(self[0], name)


def bind_toolbox(toolbox: VisionToolbox) -> type[ImagePatch]:
    """An ImagePatch subclass whose methods use ``toolbox`` (no global state)."""
    return type("ImagePatch", (ImagePatch,), {"_toolbox": toolbox, "__doc__": ImagePatch.__doc__})
