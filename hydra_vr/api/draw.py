"""Draw boxes with labels on an image (for --draw)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from hydra_vr.api.types import Box

_PALETTE = ["#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#bfef45", "#fabed4", "#469990"]


def draw_boxes(image: Image.Image, boxes: Sequence[tuple[Box, str]], out_path: str | Path | None = None) -> Image.Image:
    """A copy of ``image`` with each (box, caption) drawn; saved to ``out_path`` when given."""
    canvas = image.convert("RGB").copy()
    draw = ImageDraw.Draw(canvas)
    width = max(2, round(max(canvas.size) / 300))
    try:
        font = ImageFont.load_default(size=max(12, round(max(canvas.size) / 50)))
    except TypeError:  # Pillow < 10.1 has no sized default font
        font = ImageFont.load_default()
    for i, (box, caption) in enumerate(boxes):
        colour = _PALETTE[i % len(_PALETTE)]
        draw.rectangle(box.to_list(None), outline=colour, width=width)
        if caption:
            tx, ty = box.x1 + width, max(0, box.y1 - font.size - 2 * width) if hasattr(font, "size") else box.y1
            bbox = draw.textbbox((tx, ty), caption, font=font)
            draw.rectangle(bbox, fill=colour)
            draw.text((tx, ty), caption, fill="white", font=font)
    if out_path is not None:
        Path(out_path).parent.mkdir(parents=True, exist_ok=True)
        canvas.save(out_path)
    return canvas
