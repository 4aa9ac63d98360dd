"""Paragraphs and lines of code from the OCR's lines: snapshots on the labelled photos and questions.

These tests pin behaviour on the labelled real photos and their labelled questions and expressions
(benchmarks/real_photos/questions.jsonl): the tools run on a labelled photo with a labelled question or
expression, and what is expected is what that photo shows (measured colours, text read, places, boxes
drawn by hand). They are snapshots of behaviour on the benchmark's own items, not mechanism tests; the
mechanism tests, with phrasings of their own, are in tests/test_text_layout.py.
"""

from __future__ import annotations

from hydra_vr.api.types import Box


def test_find_paragraph_and_code_on_the_page_photo(Patch, photo):
    # the labelled boxes of benchmarks/real_photos: "the paragraph of text", "the line of code at the bottom"
    page = Patch(str(photo("page")))
    para = page.find("paragraph")
    assert para[0].label == "paragraph" and para[0]._box().iou(Box(5, 49, 377, 135)) > 0.8
    assert len(para) == 3  # the title, the paragraph, the code line: each its own run
    code = page.find("line of code")
    assert len(code) == 1 and code[0]._box().iou(Box(15, 172, 241, 190)) > 0.5
    assert page.exists("code") and not Patch(str(photo("bus"))).exists("code")  # the bus's signs are no code
