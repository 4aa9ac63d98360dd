"""What the OCR's lines make up: paragraphs (runs of lines) and lines of program code.

The OCR reads one region per line. A paragraph is a run of lines set close together,
and a line of code is a line with a program's marks (an ``=``, braces, a ``name(...)`` or
``name.attr(`` call, indexing, a ``>>>`` prompt, an import), so both are measured on the lines, no model. Names that
ask for them are declared here once; ``VisionToolbox.look_for`` routes them to the OCR.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence

from hydra_vr.api.types import Box, TextRegion

PARAGRAPH_NAMES = frozenset({"paragraph", "paragraphs", "passage", "block of text", "text block", "body text"})
CODE_NAMES = frozenset({"code", "line of code", "lines of code", "source code", "code snippet", "program code"})

# A program's marks; not a bare ";", "[1]" or a line starting "for" or "if", which prose has too.
_CODE = re.compile(r"[={}]|>>>|\w\.\w+\(|\w\(.*\)|\w\[.*\]|^\s*(def|class)\s+\w+\s*[(:]|^\s*import\s+[\w.]+\s*$"
                   r"|^\s*from\s+[\w.]+\s+import\b|^\s*(for|if|elif|else|while|try|with)\b.*:\s*$")
_JOIN_SLACK = 0.25  # a line joins the run above it when its gap exceeds the run's usual gap by less than this x line height
_MAX_GAP = 0.8  # ... and never across a gap of this x line height or more (a new block, a caption)
_MIN_OVERLAP = 0.5  # lines of one paragraph share at least this much of the narrower one's width
_FULL_RUN = 3  # lines a run needs to score as a paragraph in full


def looks_like_code(text: str) -> bool:
    """True for a line with a program's characters ("counts = np.zeros_like(grid)"), not for prose."""
    return _CODE.search(text) is not None


def code_lines(lines: Sequence[TextRegion]) -> list[TextRegion]:
    return [r for r in lines if looks_like_code(r.text)]


def _overlap(a: Box, b: Box) -> float:
    inter = min(a.x2, b.x2) - max(a.x1, b.x1)
    return max(0.0, inter) / max(1e-6, min(a.width, b.width))


def paragraphs(lines: Sequence[TextRegion]) -> list[TextRegion]:
    """Runs of lines set close together, top to bottom, each as one region: its lines' union, their
    text joined, their mean score (scaled down for a run of under three lines). Line spacing differs
    between documents, so the usual gap is measured: the median of the gaps under one line height
    between consecutive lines (OCR boxes of one paragraph often overlap); a larger gap, another
    width or another height starts a new run."""
    ordered = sorted(lines, key=lambda r: (r.box.y1, r.box.x1))
    if not ordered:
        return []
    height = statistics.median(r.box.height for r in ordered)
    gaps = [b.box.y1 - a.box.y2 for a, b in zip(ordered, ordered[1:])]
    close = [g for g in gaps if g < _MAX_GAP * height]
    usual = statistics.median(close) if close else 0.0
    limit = min(usual + _JOIN_SLACK * height, _MAX_GAP * height)
    runs: list[list[TextRegion]] = [[ordered[0]]]
    for line in ordered[1:]:
        # the run it continues need not be the last one started: on a vehicle's side a route number (another
        # column) is read between the two lines of a slogan
        fits = [(line.box.y1 - run[-1].box.y2, i) for i, run in enumerate(runs) if _continues(run[-1], line, limit)]
        if fits:
            runs[min(fits)[1]].append(line)
        else:
            runs.append([line])
    return [_merge(run) for run in runs]  # started in reading order, so listed in it


def _continues(last: TextRegion, line: TextRegion, limit: float) -> bool:
    """True when ``line`` is the next line of the run ending in ``last``: close below it, the same letter size,
    overlapping it across."""
    same_size = 0.67 <= line.box.height / max(last.box.height, 1e-6) <= 1.5
    return line.box.y1 - last.box.y2 <= limit and same_size and _overlap(last.box, line.box) >= _MIN_OVERLAP


def _merge(run: list[TextRegion]) -> TextRegion:
    box = Box(min(r.box.x1 for r in run), min(r.box.y1 for r in run), max(r.box.x2 for r in run), max(r.box.y2 for r in run))
    # a run of one or two lines is a paragraph in name only (a title, a caption): it ranks below a run of three
    score = sum(r.score for r in run) / len(run) * min(1.0, len(run) / _FULL_RUN)
    return TextRegion(box, " ".join(r.text for r in run), score)


__all__ = ["CODE_NAMES", "PARAGRAPH_NAMES", "code_lines", "looks_like_code", "paragraphs"]
