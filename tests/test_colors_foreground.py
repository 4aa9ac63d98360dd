"""Object colours come from the object inside its box, not from the background the box also holds."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from hydra_vr.api import colors as color_ops
from hydra_vr.api.types import ToolCallRecord
from hydra_vr.memory.textualizer import textualize_call

BLUE, RED = (30, 60, 200), (210, 30, 30)


def _red_square_on_blue() -> Image.Image:
    # A 300x200 blue picture with a red 40x40 square: a loose box around the square is mostly blue.
    img = Image.new("RGB", (300, 200), BLUE)
    ImageDraw.Draw(img).rectangle((130, 80, 169, 119), fill=RED)
    return img


def test_red_square_on_a_large_blue_background_reads_red() -> None:
    box_crop = _red_square_on_blue().crop((90, 40, 210, 160))  # the square covers 11% of this box
    whole = color_ops.read_colors(box_crop)
    fg = color_ops.read_colors(box_crop, foreground=True)
    assert whole.top() == "blue"  # the old reading: the box's background wins
    assert fg.source == color_ops.FOREGROUND and fg.top() == "red"
    assert fg.histogram["red"] > 0.75 and whole.histogram["red"] < 0.3  # mask edges hold some blue
    assert 0.08 < fg.mask_share < 0.2  # about the square's 11% of the box
    assert color_ops.has_color(box_crop, "red", foreground=True)[0]
    assert not color_ops.has_color(box_crop, "blue", foreground=True)[0]
    assert color_ops.best_color_match(box_crop, ["blue", "red"], foreground=True) == "red"
    assert [c.name for c in color_ops.dominant_colors(box_crop, top_k=1, foreground=True)] == ["red"]


def test_degenerate_masks_fall_back_to_centre_weighting_and_say_so() -> None:
    flat = Image.new("RGB", (80, 60), RED)  # nothing to tell apart from the border
    reading = color_ops.read_colors(flat, foreground=True)
    assert reading.source == color_ops.CENTER and reading.top() == "red"
    assert "degenerate" in reading.note and reading.mask_share == 0.0
    thin = Image.new("RGB", (200, 6), RED)
    assert "too thin" in color_ops.read_colors(thin, foreground=True).note
    # A scene is not segmented at all.
    scene = color_ops.read_colors(_red_square_on_blue())
    assert scene.source == color_ops.CENTER and scene.mask_share is None
    assert "centre-weighted" in color_ops.evidence(scene)


def test_patch_colour_calls_use_the_foreground_for_objects_only(Patch, embedded_toolbox) -> None:
    scene = Patch(_red_square_on_blue())
    square = scene.crop(90, 40, 210, 160)
    with embedded_toolbox.recording() as calls:
        assert square.verify_property("square", "red") and not square.verify_property("square", "blue")
        assert square.best_text_match(["blue", "red"]) == "red"
        # The whole image is a scene: its colours are every pixel's, so it is blue.
        assert scene.best_text_match(["blue", "red"]) == "blue"
    evidence = [c.meta["evidence"] for c in calls]
    assert all("object mask" in e for e in evidence[:3]) and "centre-weighted" in evidence[3]
    line = textualize_call(calls[2])
    assert line.startswith("best_text_match(['blue', 'red']): 'red' (pixel colours of the object mask")


def test_textualizer_keeps_plain_best_text_match_lines() -> None:
    call = ToolCallRecord("best_text_match", {"options": ["a cat", "a dog"]}, "a cat", 1.0)
    assert textualize_call(call) == "best_text_match(['a cat', 'a dog']): 'a cat'"


def _readings(patch) -> tuple[color_ops.ColorReading, color_ops.ColorReading]:
    crop = patch.cropped_image
    return color_ops.read_colors(crop), color_ops.read_colors(crop, foreground=True)


# (photo, what to find, which detection, its colour as a person sees it in the photo)
REAL_OBJECTS = [
    ("bus", "bus", 0, "blue"),  # blue city bus; the box also holds the street, buildings, people
    ("bus", "person", 1, "black"),  # man in a black jacket, the blue bus behind him
    ("bus", "person", 2, "black"),  # man in a black coat and sunglasses
    ("zidane", "person", 0, "black"),  # dark suit in front of a red, blurred crowd
    ("zidane", "person", 1, "black"),  # dark suit
]


@pytest.mark.slow
@pytest.mark.parametrize("photo_name,query,index,colour", REAL_OBJECTS)
def test_real_objects_foreground_raises_their_colour_share(Patch, photo, photo_name, query, index, colour) -> None:
    obj = Patch(str(photo(photo_name))).find(query)[index]
    whole, fg = _readings(obj)
    assert fg.source == color_ops.FOREGROUND, fg.note
    assert fg.histogram[colour] > whole.histogram[colour] + 0.05
    assert fg.top() == colour
    assert obj.verify_property(query, colour)
    assert obj.best_text_match(["red", "blue", "black", "white", "green"]) == colour


@pytest.mark.slow
def test_real_objects_whose_colour_does_not_separate_stay_right(Patch, photo) -> None:
    # The tabby cat fills its box: orange-brown either way, read over its own pixels.
    cat = Patch(str(photo("chelsea"))).find("cat")[0]
    whole, fg = _readings(cat)
    assert fg.source == color_ops.FOREGROUND and fg.top() in ("orange", "brown") and whole.top() in ("orange", "brown")
    assert fg.histogram["orange"] + fg.histogram["brown"] > whole.histogram["orange"] + whole.histogram["brown"]
    # The red motorcycle: its chrome engine and black tyres keep red from being the top colour,
    # but red is still a fifth of its pixels, so "is it red?" is yes and "is it blue?" no.
    bike = Patch(str(photo("motorcycle"))).find("motorcycle")[0]
    assert bike.verify_property("motorcycle", "red") and not bike.verify_property("motorcycle", "blue")
    assert bike.best_text_match(["red", "blue", "green"]) == "red"
    # A person's box on the bus photo: not blue, although the blue bus fills its background.
    man = Patch(str(photo("bus"))).find("person")[2]
    assert man.best_text_match(["blue", "black"]) == "black"


def test_a_dark_pixel_of_strong_colour_keeps_its_hue() -> None:
    # dark green leaves (V 0.16-0.22, S over 0.5) are dark green to a person, not black; a dark gray is black
    dark_green = np.array([[[10, 52, 30]]], dtype=np.uint8)  # V 0.20, S 0.81
    dark_gray = np.array([[[45, 48, 50]]], dtype=np.uint8)  # V 0.20, S 0.10
    almost_black = np.array([[[6, 25, 14]]], dtype=np.uint8)  # V 0.10: too dark for any hue
    names = [color_ops.BASE_COLORS[int(color_ops.pixel_names(p)[0, 0])] for p in (dark_green, dark_gray, almost_black)]
    assert names == ["green", "black", "black"]


def test_a_dark_yellow_hue_near_green_is_olive_green_and_a_light_one_stays_yellow(photo) -> None:
    # yellow is seen only in light: shaded foliage of a yellow hue near green looks olive, which people call green
    shaded_leaves = np.array([[[88, 92, 18]]], dtype=np.uint8)  # hue 63, S 0.80, V 0.36
    lemon = np.array([[[236, 232, 60]]], dtype=np.uint8)  # hue 59, S 0.75, V 0.93
    shaded_mustard = np.array([[[110, 92, 20]]], dtype=np.uint8)  # hue 48, V 0.43: the shaded side of a yellow thing
    names = [color_ops.BASE_COLORS[int(color_ops.pixel_names(p)[0, 0])] for p in (shaded_leaves, lemon, shaded_mustard)]
    assert names == ["green", "yellow", "yellow"]
    # on a photo: the trees below the pagoda of the china sample read green first, no longer yellow
    trees = Image.open(photo("china")).convert("RGB").crop((0, 320, 280, 427))
    assert color_ops.read_colors(trees).shares()[0].name == "green"


def test_a_vivid_red_orange_is_orange_and_a_shaded_one_stays_red(photo) -> None:
    # an orange flight suit under studio light is hue 12-15 at S 0.7, V 0.86: a person says orange
    suit = np.array([[[220, 100, 64]]], dtype=np.uint8)  # hue 14, S 0.71, V 0.86
    shaded_red = np.array([[[150, 70, 60]]], dtype=np.uint8)  # hue 7, S 0.60, V 0.59
    pale_red_orange = np.array([[[230, 150, 120]]], dtype=np.uint8)  # hue 16, S 0.48: washed out
    names = [color_ops.BASE_COLORS[int(color_ops.pixel_names(p)[0, 0])] for p in (suit, shaded_red)]
    assert names == ["orange", "red"]
    assert color_ops.BASE_COLORS[int(color_ops.pixel_names(pale_red_orange)[0, 0])] != "red"
    # on the photos: the astronaut's suit (her body region) reads orange first; the red storage box on the
    # motorcycle photo's shelf, whose shaded side is also hue 12-15 but dim, keeps one red region
    astronaut = Image.open(photo("astronaut")).convert("RGB")
    assert color_ops.read_colors(astronaut.crop((15, 161, 364, 351))).shares()[0].name == "orange"
    motorcycle = Image.open(photo("motorcycle")).convert("RGB")
    box = motorcycle.crop((515, 180, 617, 255))
    assert color_ops.read_colors(box, foreground=True).shares()[0].name == "red"


def _bands(*bands: tuple[int, tuple[int, int, int]]) -> Image.Image:
    """A 100-wide patch of horizontal bands, each (rows, rgb)."""
    return Image.fromarray(np.concatenate([np.full((rows, 100, 3), rgb, np.uint8) for rows, rgb in bands]))


def test_a_white_surface_in_shade_reads_white_and_a_gray_thing_stays_gray() -> None:
    # a white wall, half of it in a bluish shade (V 0.72): a person calls all of it white
    shaded = color_ops.color_histogram(_bands((50, (246, 246, 250)), (50, (176, 180, 184))), center_weight=False)
    assert shaded["white"] > 0.99 and shaded["gray"] == 0
    # a pale gray thing with a small white highlight: its light gray is its own colour
    pale = color_ops.color_histogram(_bands((20, (246, 246, 246)), (80, (176, 176, 176))), center_weight=False)
    assert pale["gray"] > 0.75
    # a mid-gray (V 0.45) beside as much white is a second colour, not white in shade
    mid = color_ops.color_histogram(_bands((50, (246, 246, 246)), (50, (115, 115, 118))), center_weight=False)
    assert mid["gray"] > 0.45 and mid["white"] > 0.45


def test_head_colours_are_those_that_describe_the_named_thing() -> None:
    assert color_ops.head_colors("yellow taxi") == ("yellow",)
    assert color_ops.head_colors("light green kite") == ("green",)  # the shade word is dropped
    assert color_ops.head_colors("black and white cow") == ("black", "white")
    assert color_ops.head_colors("girl with a pink umbrella") == ()  # the umbrella's colour, not the girl's
    assert color_ops.head_colors("orange") == () and color_ops.head_colors("kite") == ()


def test_find_keeps_the_detections_whose_own_pixels_have_the_named_colour(embedded_toolbox, photo) -> None:
    # the same photo with its hues turned by a third: the detector finds the same vehicle, its colour changes
    image = Image.open(photo("bus")).convert("RGB")
    hsv = np.array(image.convert("HSV"))
    hsv[..., 0] = (hsv[..., 0].astype(int) + 170) % 256  # a turn of two thirds: blue -> green
    turned = Image.fromarray(hsv, "HSV").convert("RGB")
    plain, _ = embedded_toolbox.look_for(image, "bus")
    assert plain, "the detector finds the bus"
    kept, meta = embedded_toolbox.look_for(image, "blue bus")
    assert len(kept) == len(plain) and "whose own pixels are blue" in meta["mapping"]
    assert embedded_toolbox.look_for(image, "red bus")[0] == []
    recoloured, _ = embedded_toolbox.look_for(turned, "bus")
    assert recoloured, "the detector still finds it with its hues turned"
    assert embedded_toolbox.look_for(turned, "blue bus")[0] == []
    assert len(embedded_toolbox.look_for(turned, "green bus")[0]) == len(recoloured)


def test_a_coloured_name_no_tool_knows_is_looked_for_as_regions_of_its_colour(embedded_toolbox) -> None:
    img = Image.new("RGB", (320, 240), (235, 235, 225))
    draw = ImageDraw.Draw(img)
    for x in (40, 140, 240):
        draw.ellipse([x, 90, x + 40, 130], fill=(200, 30, 30))
    draw.rectangle([150, 180, 200, 220], fill=(30, 60, 200))
    reds, meta = embedded_toolbox.look_for(img, "red sticker")
    assert len(reds) == 3 and meta["measured"] and "regions of red pixels stand in" in meta["mapping"]
    assert len(embedded_toolbox.look_for(img, "blue sticker")[0]) == 1
    none, meta = embedded_toolbox.look_for(img, "green sticker")
    assert none == [] and meta["measured"]  # no green pixels: an empty search over every pixel is evidence
    assert embedded_toolbox.look_for(img, "sticker")[1].get("unsearchable")  # no colour: nothing to stand in


def _dark_thing_cut_by_the_frame() -> Image.Image:
    # A grey backdrop; a black thing fills the lower right and runs off the frame there, its middle streaked with a
    # grey sheen (the backdrop's grey), its rim along the frame plain black.
    img = Image.new("RGB", (300, 200), (100, 100, 100))
    draw = ImageDraw.Draw(img)
    draw.rectangle((120, 60, 299, 199), fill=(12, 12, 12))
    for x in range(126, 270, 8):
        draw.rectangle((x, 66, x + 4, 169), fill=(115, 115, 115))
    return img


def test_the_strip_along_the_photo_frame_is_the_object_not_its_background(Patch) -> None:
    from hydra_vr.api.types import Box, frame_sides, object_crop, sides_on_frame

    photo = _dark_thing_cut_by_the_frame()
    box = Box(100, 40, 300, 200)
    assert sides_on_frame(box, 300, 200) == (False, False, True, True)
    assert sides_on_frame(Box(3, 0, 150, 196), 300, 200) == (True, True, False, True)  # a few px short still lies on it
    crop = object_crop(photo, box)
    assert frame_sides(crop) == (False, False, True, True)
    # Read as if every side were background, the black that runs along the frame counts as backdrop: grey wins.
    blind = color_ops.read_colors(photo.crop((100, 40, 300, 200)), foreground=True)
    assert blind.top() != "black"
    seen = color_ops.read_colors(crop, foreground=True)
    assert seen.source == color_ops.FOREGROUND and seen.top() == "black" and seen.histogram["black"] > 0.55
    # ImagePatch marks its crops the same way, so a program's patch reads black too.
    assert Patch(photo).crop(100, 40, 300, 200).best_text_match(["gray", "black"]) == "black"
    # A crop of that crop inside the photo: its sides lie on the frame only where the outer crop's do.
    inner = object_crop(crop, Box(20, 20, 200, 160))
    assert frame_sides(inner) == (False, False, True, True)
    assert frame_sides(object_crop(crop, Box(0, 0, 100, 100))) == (False, False, False, False)
    assert frame_sides(crop.crop((0, 0, 50, 50))) == (False, False, False, False)  # a plain crop of it: not worked out


def test_standout_region_is_the_box_of_what_differs_from_the_border():
    # a green leaf shape on a pale grey backdrop, off centre
    img = Image.new("RGB", (480, 320), (226, 228, 224))
    ImageDraw.Draw(img).polygon([(300, 60), (420, 150), (330, 260), (280, 160)], fill=(40, 150, 60))
    region = color_ops.standout_region(img)
    assert region is not None
    (x1, y1, x2, y2), share = region
    # the shape spans [280, 60, 420, 260]; its thin tips may fall outside the 2nd-98th percentile box
    assert 275 <= x1 <= 300 and 55 <= y1 <= 90 and 400 <= x2 <= 425 and 240 <= y2 <= 265
    assert 0.05 < share < 0.2
    # a plain patch: nothing stands out
    assert color_ops.standout_region(Image.new("RGB", (480, 320), (120, 60, 30))) is None
