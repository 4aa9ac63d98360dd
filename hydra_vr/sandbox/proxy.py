"""Child side of the tool proxy: a toolbox look-alike that forwards every call to the parent.

Images both sides already hold (the episode image, sent once) travel as ``(image key, crop box)``
instead of pixels; any other image (say ``image.rotate(90)``) travels as raw pixels.
"""

from __future__ import annotations

from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, NoReturn

from PIL import Image

from hydra_vr.api.image_patch import PATCH_FIELDS, ImagePatch, bind_toolbox
from hydra_vr.api.operations import tool_operations, toolbox_signature
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


class _Proxy:
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


def _forwarder(name: str) -> Callable[..., Any]:
    """A proxy method with the toolbox method's signature: every argument sent, defaults filled."""
    sig = toolbox_signature(name)

    def forward(self: _Proxy, *args: Any, **kwargs: Any) -> Any:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        return self._call(name, *bound.arguments.values())

    forward.__name__ = forward.__qualname__ = name
    forward.__signature__ = sig  # type: ignore[attr-defined]
    return forward


# One method per operation of the table (hydra_vr.api.operations): adding one adds it here too.
ProxyToolbox = type("ProxyToolbox", (_Proxy,), {op.name: _forwarder(op.name) for op in tool_operations() if op.name})


def _encode(value: Any) -> Any:
    """A tool argument as plain data (see hydra_vr.sandbox.wire)."""
    if isinstance(value, str):
        return str(value)  # a subclass (api.types.Reply) would not pass the wire's plain-data check
    if value is None or isinstance(value, (bool, int, float)):
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


# What programs may read on patches and PIL images (everything else is refused by the policy). find()'s list
# needs no entry: it reads only these names, on its first patch (api.image_patch.Patches).
PATCH_ATTRIBUTES: frozenset[str] = PATCH_FIELDS
IMAGE_ATTRIBUTES: frozenset[str] = frozenset({
    "size", "width", "height", "mode", "crop", "resize", "rotate", "transpose", "convert", "copy",
    "getpixel", "getbbox", "getcolors", "getextrema", "histogram", "split", "getchannel",
})
