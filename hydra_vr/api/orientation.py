"""Which way up a thing with text is, from OCR: "Is the label upside down?".

PP-OCR classifies each text line it finds as upright or turned half a turn before reading it (``line_orientations`` of
the OCR backend), so a photo whose writing is upside down is read right and says so. No other offline tool sees it:
the describe LLM is shown the text as read, upright. The toolbox asks this module before any VQA backend; it decides
only where the patch holds sure text lines and two thirds of them agree, else the backend answers as before. A thing
without text (a flag, a chair) stays the backend's.
"""

from __future__ import annotations

from collections.abc import Sequence

from hydra_vr.asked import OrientationAsked

AGREE = 2 / 3  # the share of the sure lines that must agree on one way up


def orientation_of(lines: Sequence[tuple[str, bool]]) -> str | None:
    """"upside down", "upright", or None (no line, or the lines split) for (text, upside down) lines."""
    if not lines:
        return None
    down = sum(1 for _, flipped in lines if flipped)
    if down >= AGREE * len(lines):
        return "upside down"
    if len(lines) - down >= AGREE * len(lines):
        return "upright"
    return None


def answer_orientation(lines: Sequence[tuple[str, bool]], asked: OrientationAsked) -> tuple[str, str] | None:
    """(answer, evidence) of ``asked`` from the patch's text ``lines``, or None when they do not decide."""
    pole = orientation_of(lines)
    answer = next((a for a, p in asked.claims if p == pole), None) if pole else None
    if answer is None:
        return None
    down = sum(1 for _, flipped in lines if flipped)
    shown = ", ".join(repr(t[:24]) for t, _ in lines[:4])
    return answer, f"text lines read: {down} of {len(lines)} turned upside down ({shown}) -> {pole}"


__all__ = ["answer_orientation", "orientation_of"]
