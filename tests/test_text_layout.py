"""Paragraphs and lines of code from the OCR's lines: grouping rules on made-up lines, then the OCR on a real photo.

(The labelled boxes on the page photo: tests/snapshots/test_text_layout_snapshots.py.)
"""

from __future__ import annotations

from hydra_vr.api.text_layout import code_lines, looks_like_code, paragraphs
from hydra_vr.api.types import Box, TextRegion


def line(x1: float, y1: float, x2: float, y2: float, text: str = "some words here", score: float = 1.0) -> TextRegion:
    return TextRegion(Box(x1, y1, x2, y2), text, score)


def test_lines_set_close_make_one_paragraph_and_a_gap_starts_another():
    # a title, four lines whose boxes overlap (as the OCR draws them), a gap, one more line
    lines = [line(3, 9, 296, 36, "Title"), *(line(1, 45 + 17 * i, 380, 68 + 17 * i) for i in range(4)), line(37, 160, 243, 183, "x = f(y)")]
    runs = paragraphs(list(reversed(lines)))  # the order the OCR lists them in does not matter
    assert [r.box.to_list(0) for r in runs] == [[3, 9, 296, 36], [1, 45, 380, 119], [37, 160, 243, 183]]
    assert runs[1].text == " ".join(["some words here"] * 4)
    # a run of under three lines is a paragraph in name only: the four-line run ranks first
    assert runs[1].score == 1.0 and runs[0].score < 0.5 and runs[2].score < 0.5


def test_lines_far_apart_or_side_by_side_stay_apart():
    # signs on a street photo: one line each, far below one another or in other columns
    lines = [line(10, 100, 200, 120), line(10, 300, 200, 320), line(400, 122, 600, 142), line(10, 500, 200, 520)]
    assert len(paragraphs(lines)) == 4
    # a line twice as tall (a heading) does not join the run under it
    assert len(paragraphs([line(0, 0, 300, 40), line(0, 42, 300, 60), line(0, 61, 300, 79)])) == 2
    assert paragraphs([]) == []


def test_code_is_told_from_prose():
    code = ["markers = np.zeros like(coins)", ">>> import numpy", "print(x)", "a[0] = b;", "df.groupby(key)",
            "import numpy", "from skimage import data", "for coin in coins:", "def f(x):", "counts[key]"]
    prose = ["Let us first determine markers of the coins and the", "histogram of grey values:", "Here, the cat (left) sleeps.",
             "for the coins we use two markers", "as shown in [1]; see also [2].", "If it rains, we stay in."]
    assert all(looks_like_code(t) for t in code)
    assert not any(looks_like_code(t) for t in prose)
    assert [r.text for r in code_lines([line(0, 0, 9, 9, t) for t in code + prose])] == code


def test_a_paragraph_continues_past_a_line_of_another_column(photo):
    from PIL import Image

    from hydra_vr.api.backends.ocr import RapidOCRReader

    # on the bus's side "10" (left of them) is read between "cero" and "emisiones", one block of big letters
    bus = Image.open(photo("bus")).convert("RGB").crop((15, 216, 793, 758))
    texts = [p.text for p in paragraphs(RapidOCRReader().read_text(bus))]
    assert "cero emisiones" in texts and "10" in texts
