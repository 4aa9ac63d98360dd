"""Child side of the tool proxy: a toolbox look-alike that forwards every call to the parent.

Images both sides already hold (the episode image, sent once) travel as ``(image key, crop box)``
instead of pixels; any other image (say ``image.rotate(90)``) travels as raw pixels.
"""

from __future__ import annotations

from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, NoReturn

from PIL import Image

from hydra_vr.api.image_patch import ImagePatch, bind_toolbox
from hydra_vr.api.types import Box
from hydra_vr.sandbox.wire import BOX, IMAGE_PIXELS, IMAGE_REF, recv_trusted, send

# Attributes set on PIL images by the child to recognise images the parent also has.
KEY_ATTR = "_hvr_key"  # the whole episode image
REF_ATTR = "_hvr_ref"  # a crop of it: (key, (x1, y1, x2, y2))

# Errors raised by tools that keep their type inside the program; others become ToolError.
_PORTABLE_ERRORS: dict[str, type[Exception]] = {
    e.__name__: e for e in (ValueError, TypeError, IndexError, KeyError, RuntimeError, ZeroDivisionError)
}


class ToolError(RuntimeError):
    """A vision tool failed in the parent; ``remote_type`` is the exception type it raised there."""

    def __init__(self, remote_type: str, message: str) -> None:
        super().__init__(message)
        self.remote_type = remote_type


class ProxyToolbox:
    """Forwards the VisionToolbox operations to the parent over ``conn`` (blocking)."""

    def __init__(self, conn: Connection, max_calls: int = 500) -> None:
        self._conn = conn
        self.max_calls = max_calls
        self.calls = 0

    def _call(self, op: str, *args: Any) -> Any:
        if self.calls >= self.max_calls:
            raise RuntimeError(f"too many vision tool calls in one step (limit {self.max_calls})")
        self.calls += 1
        send(self._conn, ("tool", op, tuple(_encode(a) for a in args)))
        reply = recv_trusted(self._conn)
        if reply[0] == "tool_ok":
            return reply[1]
        _, remote_type, message = reply
        error = _PORTABLE_ERRORS.get(remote_type)
        if error is not None:
            raise error(message)
        raise ToolError(remote_type, message)

    def find(self, image: Image.Image, name: str) -> Any:
        return self._call("find", image, name)

    def read_text(self, image: Image.Image) -> Any:
        return self._call("read_text", image)

    def classify(self, image: Image.Image, top_k: int = 5) -> Any:
        return self._call("classify", image, top_k)

    def colors(self, image: Image.Image, top_k: int = 3, foreground: bool = False) -> Any:
        return self._call("colors", image, top_k, foreground)

    def depth(self, original: Image.Image, box: Box) -> Any:
        return self._call("depth", original, box)

    def simple_query(self, image: Image.Image, question: str) -> Any:
        return self._call("simple_query", image, question)

    def verify_property(self, image: Image.Image, name: str, prop: str, foreground: bool = False) -> Any:
        return self._call("verify_property", image, name, prop, foreground)

    def best_text_match(self, image: Image.Image, options: list[str], foreground: bool = False) -> Any:
        return self._call("best_text_match", image, options, foreground)

    def best_image_match(self, images: list[Image.Image], text: str) -> Any:
        return self._call("best_image_match", images, text)

    def caption(self, image: Image.Image) -> Any:
        return self._call("caption", image)

    def llm_query(self, question: str, long_answer: bool = True) -> Any:
        return self._call("llm_query", question, long_answer)


def _encode(value: Any) -> Any:
    """A tool argument as plain data (see hydra_vr.sandbox.wire)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Image.Image):
        key = getattr(value, KEY_ATTR, None)
        if key is not None:
            return (IMAGE_REF, key, None)
        ref = getattr(value, REF_ATTR, None)
        if ref is not None:
            return (IMAGE_REF, ref[0], ref[1])
        img = value if value.mode in ("RGB", "L", "RGBA") else value.convert("RGB")
        return (IMAGE_PIXELS, img.mode, img.width, img.height, img.tobytes())
    if isinstance(value, Box):
        return (BOX, float(value.x1), float(value.y1), float(value.x2), float(value.y2))
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    raise TypeError(f"a {type(value).__name__} cannot be passed to a vision tool")


def make_patch_class(toolbox: ProxyToolbox, refuse: Callable[[str], NoReturn]) -> type[ImagePatch]:
    """The ImagePatch programs see: bound to the proxy, tags crops, and takes only image objects."""
    bound = bind_toolbox(toolbox)  # type: ignore[arg-type]  # duck-typed toolbox

    def __init__(self: ImagePatch, image: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(image, (str, bytes)) or hasattr(image, "__fspath__"):
            refuse("ImagePatch() takes the image object (e.g. `image`), not a file path")
        if image is None:
            raise ValueError("there is no image in this step (image is None)")
        if not isinstance(image, Image.Image):
            raise TypeError(f"ImagePatch() needs an image, got {type(image).__name__}")
        bound.__init__(self, image, *args, **kwargs)

    def cropped_image(self: ImagePatch) -> Image.Image:
        crop = bound.cropped_image.fget(self)  # type: ignore[attr-defined]
        key = getattr(self.original_image, KEY_ATTR, None)
        if key is not None and getattr(crop, REF_ATTR, None) is None:
            # The same integer box ImagePatch.cropped_image crops with, so the parent's crop matches.
            box = (int(self.x1), int(self.y1), int(round(self.x2)), int(round(self.y2)))
            setattr(crop, REF_ATTR, (key, box))
        return crop

    return type(
        "ImagePatch",
        (bound,),
        {
            "__init__": __init__,
            "cropped_image": property(cropped_image, doc=ImagePatch.cropped_image.__doc__),
            "__doc__": ImagePatch.__doc__,
            "__qualname__": "ImagePatch",
        },
    )


# What programs may read on patches and PIL images (everything else is refused by the policy).
# Patches: the public API of ImagePatch as it stands, plus the attributes __init__ sets.
PATCH_ATTRIBUTES: frozenset[str] = frozenset(
    {n for n in vars(ImagePatch) if not n.startswith("_")}
    | {"x1", "y1", "x2", "y2", "original_image", "parent", "label", "score"}
)
IMAGE_ATTRIBUTES: frozenset[str] = frozenset({
    "size", "width", "height", "mode", "crop", "resize", "rotate", "transpose", "convert", "copy",
    "getpixel", "getbbox", "getcolors", "getextrema", "histogram", "split", "getchannel",
})
