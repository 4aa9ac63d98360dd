"""Uploaded images: size limit, decompression-bomb and format checks, stored under the server's own names.

A client never names a file: an upload is written under a random name in the server's work
folder, and a ``sample:NAME`` is looked up among the packaged photos only.
"""

from __future__ import annotations

import io
import uuid
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from hydra_vr.assets import SampleImageError, sample_image, sample_names

FORMAT_SUFFIX = {"JPEG": ".jpg", "PNG": ".png", "GIF": ".gif", "BMP": ".bmp", "WEBP": ".webp", "TIFF": ".tif"}


def human_size(n: float) -> str:
    """``512 KB``, ``20 MB``: sizes in messages people read."""
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{max(1, round(n / 1024))} KB"


class ImageRejected(ValueError):
    """An upload that is not accepted; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def check_image_bytes(data: bytes, *, max_bytes: int, max_pixels: int) -> str:
    """The image format of ``data`` (``PNG``, ``JPEG``...) or :class:`ImageRejected` saying why not.

    Only the header is decoded to read the size, so a small file claiming billions of pixels is
    refused before any pixel is decompressed; ``verify`` then checks the file's structure.
    """
    if not data:
        raise ImageRejected("the uploaded image is empty")
    if len(data) > max_bytes:
        raise ImageRejected(f"the upload is {human_size(len(data))}; the limit is {human_size(max_bytes)}", status=413)
    try:
        # PIL itself refuses more than twice its MAX_IMAGE_PIXELS at open; our limit applies below that.
        with Image.open(io.BytesIO(data)) as img:
            width, height = img.size
            fmt = img.format or ""
            if width * height > max_pixels:
                raise ImageRejected(f"the image is {width} x {height} pixels; the limit is {max_pixels} pixels "
                                    "(decompression bomb protection)")
            img.verify()
    except ImageRejected:
        raise
    except Image.DecompressionBombError as exc:
        raise ImageRejected(f"the image is too large to decode safely: {exc}") from None
    except UnidentifiedImageError:
        raise ImageRejected("the upload is not an image PIL can read (PNG, JPEG, GIF, BMP, WebP, TIFF...)") from None
    except Exception as exc:  # truncated or corrupt files fail in verify with various errors
        raise ImageRejected(f"the image is damaged: {type(exc).__name__}: {exc}") from None
    return fmt


def store_upload(data: bytes, fmt: str, folder: Path) -> Path:
    """Write checked image bytes under a fresh random name in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{uuid.uuid4().hex}{FORMAT_SUFFIX.get(fmt, '.img')}"
    path.write_bytes(data)
    return path


def resolve_sample(name: str) -> Path:
    """The packaged photo called ``name`` (``bus`` or ``sample:bus``); :class:`ImageRejected` otherwise."""
    key = name.removeprefix("sample:").strip()
    if key not in sample_names():
        raise ImageRejected(f"unknown sample {key!r}; choose from {', '.join(sample_names())}")
    try:
        return sample_image(key)
    except SampleImageError as exc:
        raise ImageRejected(str(exc), status=404) from None
