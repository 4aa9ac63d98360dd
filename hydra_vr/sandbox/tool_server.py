"""Parent side of the tool proxy: decodes a child's tool request and runs it on the real toolbox.

Child requests are untrusted plain data: the operation must be one of ``TOOL_OPS`` with its exact
arity, image references must name an image this parent sent, pixel payloads must be consistent.
"""

from __future__ import annotations

from typing import Any

from PIL import Image

from hydra_vr.api.types import Box, object_crop
from hydra_vr.sandbox.wire import BOX, IMAGE_PIXELS, IMAGE_REF, TOOL_OPS

NO_TOOLS_MESSAGE = "no vision tools configured: this sandbox was given no toolbox, so {op}() cannot run"
_MAX_PIXELS = 60_000_000
_MODES = {"RGB": 3, "RGBA": 4, "L": 1}


class BadRequest(ValueError):
    """A malformed tool request (a well-behaved child never sends one)."""


class ToolServer:
    """Holds the episode images by key and answers tool requests with ``toolbox``."""

    def __init__(self) -> None:
        self.images: dict[str, Image.Image] = {}

    def answer(self, toolbox: Any, op: Any, args: Any) -> tuple[Any, ...]:
        """The reply to send back: ``("tool_ok", value)`` or ``("tool_err", type_name, message)``."""
        try:
            if not isinstance(op, str) or op not in TOOL_OPS:
                raise BadRequest(f"unknown tool operation {op!r}")
            if not isinstance(args, tuple) or len(args) != TOOL_OPS[op]:
                raise BadRequest(f"{op}() takes {TOOL_OPS[op]} arguments")
            if toolbox is None:
                return ("tool_err", "RuntimeError", NO_TOOLS_MESSAGE.format(op=op))
            decoded = [self._decode(a) for a in args]
            return ("tool_ok", getattr(toolbox, op)(*decoded))
        except Exception as exc:  # the program gets the tool's error, the parent carries on
            return ("tool_err", type(exc).__name__, str(exc)[:500])

    def _decode(self, value: Any, depth: int = 0) -> Any:
        if value is None or isinstance(value, (str, bool, int, float)):
            return value
        if isinstance(value, list) and depth < 2:
            return [self._decode(v, depth + 1) for v in value]
        if isinstance(value, tuple) and value:
            tag = value[0]
            if tag == IMAGE_REF and len(value) == 3:
                return self._image_ref(value[1], value[2])
            if tag == IMAGE_PIXELS and len(value) == 5:
                return _pixels(*value[1:])
            if tag == BOX and len(value) == 5 and all(isinstance(v, (int, float)) for v in value[1:]):
                return Box(*(float(v) for v in value[1:]))
        raise BadRequest(f"cannot decode a tool argument of type {type(value).__name__}")

    def _image_ref(self, key: Any, box: Any) -> Image.Image:
        image = self.images.get(key) if isinstance(key, str) else None
        if image is None:
            raise BadRequest(f"unknown image {key!r}")
        if box is None:
            return image
        if not (isinstance(box, tuple) and len(box) == 4 and all(type(v) is int for v in box)):
            raise BadRequest("bad crop box")
        if box[0] > 0 or box[1] > 0 or box[2] < image.width or box[3] < image.height:
            return object_crop(image, Box(*box))  # as ImagePatch.cropped_image makes it
        return image.crop(box)


def _pixels(mode: Any, width: Any, height: Any, data: Any) -> Image.Image:
    channels = _MODES.get(mode) if isinstance(mode, str) else None
    if channels is None or not all(type(v) is int and v > 0 for v in (width, height)):
        raise BadRequest("bad pixel payload")
    if width * height > _MAX_PIXELS or not isinstance(data, bytes) or len(data) != width * height * channels:
        raise BadRequest("bad pixel payload size")
    return Image.frombytes(mode, (width, height), data)
