"""ImagePatch geometry, helpers and the rendered API prompt (no models needed)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from PIL import Image

from hydra_vr.api import (
    ImageLoadError,
    ImagePatch,
    bool_to_yesno,
    coerce_to_numeric,
    distance,
    get_middle_patch,
    get_patch_closest_to_anchor_object,
    get_patch_farthest_from_anchor_object,
    sort_patches_left_to_right,
    sort_patches_top_to_bottom,
)
from hydra_vr.api.image_patch import Patches
from hydra_vr.api.spec import render_api


@pytest.fixture
def image():
    return Image.new("RGB", (200, 100), (10, 20, 30))


def test_patch_geometry(image):
    p = ImagePatch(image)
    assert p.box == [0, 0, 200, 100]
    assert (p.width, p.height, p.horizontal_center, p.vertical_center) == (200, 100, 100, 50)
    c = p.crop(10, 20, 60, 80)
    assert c.box == [10, 20, 60, 80] and c.parent is p
    cc = c.crop(5, 5, 20, 20)  # relative to c's corner
    assert cc.box == [15, 25, 30, 40]
    assert cc.cropped_image.size == (15, 15)
    assert c.overlaps_with(50, 70, 90, 90) and not c.overlaps_with(61, 0, 90, 90)
    # Boxes are clipped to the image.
    assert ImagePatch(image, -5, -5, 500, 50).box == [0, 0, 200, 50]


def test_a_list_of_patches_reads_as_its_first_and_pickles_with_what_was_searched(image):
    first, second = ImagePatch(image, 0, 0, 50, 50, label="kite"), ImagePatch(image, 100, 0, 200, 100, label="kite")
    found = Patches([first, second], "kite")
    assert (found.x2, found.box, found.label, len(found), found[1] is second) == (50, [0, 0, 50, 50], "kite", 2, True)
    again = pickle.loads(pickle.dumps(found))
    assert type(again) is Patches and again.query == "kite" and again.box == [0, 0, 50, 50]
    assert type(found[:1]) is list  # a slice is a plain list again: only find()'s own result stands for a patch
    with pytest.raises(AttributeError, match="find\\('kite'\\) found nothing"):
        Patches([], "kite").width
    with pytest.raises(AttributeError, match="no attribute 'wingspan'"):
        found.wingspan


def test_bad_inputs(tmp_path, image):
    with pytest.raises(ImageLoadError, match="not found"):
        ImagePatch(str(tmp_path / "missing.jpg"))
    bad = tmp_path / "bad.jpg"
    bad.write_text("not an image")
    with pytest.raises(ImageLoadError, match="cannot read"):
        ImagePatch(str(bad))
    with pytest.raises(ValueError, match="empty patch"):
        ImagePatch(image, 50, 50, 50, 60)
    with pytest.raises(RuntimeError, match="no vision tools"):
        ImagePatch(image).find("cat")
    arr = np.zeros((4, 6, 3), dtype=np.uint8)
    assert ImagePatch(arr).box == [0, 0, 6, 4]


def test_helpers(image):
    root = ImagePatch(image)
    a, b, c = root.crop(0, 0, 20, 20), root.crop(50, 0, 70, 20), root.crop(150, 60, 190, 90)
    assert distance(a, b) == 30
    assert distance(a, root.crop(10, 10, 30, 30)) < 0  # overlap -> minus IoU
    assert distance(3.0, 5.5) == 2.5
    assert sort_patches_left_to_right([c, a, b]) == [a, b, c]
    assert sort_patches_top_to_bottom([c, b]) == [b, c]
    assert get_middle_patch([c, a, b]) is b and get_middle_patch([]) is None
    assert get_patch_closest_to_anchor_object([b, c], a) is b
    assert get_patch_farthest_from_anchor_object([b, c], a) is c
    assert bool_to_yesno(True) == "yes" and bool_to_yesno(False) == "no"
    # the 1.5B writes bool_to_yesno(simple_query("Is there a triangle?")): "no" is a truthy string
    assert bool_to_yesno("no") == "no" and bool_to_yesno("No, there is none.") == "no" and bool_to_yesno("Yes") == "yes"
    assert bool_to_yesno("green") == "yes" and bool_to_yesno("") == "no" and bool_to_yesno([]) == "no"
    assert coerce_to_numeric("3 dogs") == 3
    assert coerce_to_numeric("1,000 people") == 1000
    assert coerce_to_numeric("two") == 2
    assert coerce_to_numeric("2.5 m") == 2.5
    assert coerce_to_numeric("blue") == "blue" and coerce_to_numeric("blue", no_string=True) is None


def test_rendered_api_is_the_docstrings():
    text = render_api()
    assert "class ImagePatch:" in text
    for name in ("def find(self, object_name: str) -> list[ImagePatch]:", "def verify_property(", "def compute_depth(",
                 "def best_image_match(", "def coerce_to_numeric(", "def sort_patches_front_to_back("):
        assert name in text
    assert ImagePatch.find.__doc__.strip().splitlines()[0] in text
    assert "parent" not in text.split("def __init__")[1].split(")")[0]  # keyword-only plumbing hidden
