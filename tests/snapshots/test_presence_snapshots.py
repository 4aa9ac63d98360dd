"""Colour regions and the grounding fallback by colour: snapshots on the labelled photos and questions.

These tests pin behaviour on the labelled real photos and their labelled questions and expressions
(benchmarks/real_photos/questions.jsonl): the tools run on a labelled photo with a labelled question or
expression, and what is expected is what that photo shows (measured colours, text read, places, boxes
drawn by hand). They are snapshots of behaviour on the benchmark's own items, not mechanism tests; the
mechanism tests, with phrasings of their own, are in tests/test_presence.py.
"""

from __future__ import annotations

from PIL import Image

from hydra_vr.api import colors as color_ops
from hydra_vr.api.types import Box


def test_colour_regions_on_real_photos(photo) -> None:
    # boxes drawn by hand (benchmarks/real_photos/questions.jsonl): the big orange flower, the red
    # storage box on the motorcycle photo's shelf
    flower = color_ops.color_regions(Image.open(photo("flower")), "orange")
    assert Box(*flower[0][0]).iou(Box(169, 85, 446, 358)) > 0.9 and flower[0][1] > 0.5  # the most of the orange
    red = color_ops.color_regions(Image.open(photo("motorcycle")), "red")
    assert max(Box(*b).iou(Box(523, 180, 617, 255)) for b, _ in red) > 0.6


def test_grounding_fallback_finds_a_thing_by_its_colour_when_no_class_names_it(embedded_toolbox, photo) -> None:
    # "the red storage box on the shelf": neither the detector nor the classifier has a class for it; the
    # fallback's last name is its colour
    from hydra_vr.api.names import expression_names

    motorcycle = Image.open(photo("motorcycle")).convert("RGB")
    names = expression_names("the red storage box on the shelf")
    found = next(dets for dets in (embedded_toolbox.find(motorcycle, n) for n in names) if dets)
    assert {d.source for d in found} == {"colors"} and any(d.box.iou(Box(523, 180, 617, 255)) > 0.8 for d in found)
    # "the big orange flower": the classifier has a flower class (daisy) and finds it first
    flower = Image.open(photo("flower")).convert("RGB")
    names = expression_names("the big orange flower")
    found = next(dets for dets in (embedded_toolbox.find(flower, n) for n in names) if dets)
    assert found[0].source == "classifier" and found[0].box.iou(Box(169, 85, 446, 358)) > 0.6
