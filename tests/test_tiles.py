"""Sliced detection (hydra_vr.api.tiles): tiles cover the image, cut finds are dropped, one thing counts once."""

from __future__ import annotations

import pytest
from PIL import Image

from hydra_vr.api import tiles
from hydra_vr.api.types import Box, Detection
from hydra_vr.config import TilesConfig, VisionConfig, load_config


def _covered(tile_boxes: list[tuple[int, int, int, int]], size: tuple[int, int]) -> bool:
    return all(any(x1 <= x < x2 and y1 <= y < y2 for x1, y1, x2, y2 in tile_boxes)
               for x in range(0, size[0], 7) for y in range(0, size[1], 7))


@pytest.mark.parametrize("grid,overlap,size", [(2, 0.2, (1000, 600)), (3, 0.25, (641, 977)), (4, 0.0, (800, 800))])
def test_tiles_cover_the_image_and_overlap_as_asked(grid, overlap, size):
    cfg = TilesConfig(grid=grid, overlap=overlap)
    boxes = tiles.tiles(cfg, size)
    assert len(boxes) == grid * grid
    assert _covered(boxes, size)
    assert all(0 <= x1 < x2 <= size[0] and 0 <= y1 < y2 <= size[1] for x1, y1, x2, y2 in boxes)
    first, second = boxes[0], boxes[1]  # neighbours in a row share `overlap` of a tile's width
    shared = first[2] - second[0]
    assert shared == pytest.approx(overlap * (first[2] - first[0]), abs=2)


class _SeesLargeSquares:
    """A fake detector: it sees a white square only where it is at least `min_share` of the view's width,
    as a detector with a fixed input size misses things that are small in a large view."""

    def __init__(self, squares: list[Box], min_share: float = 0.1) -> None:
        self.squares, self.min_share, self.views = squares, min_share, []

    def __call__(self, view: Image.Image) -> list[Detection]:
        self.views.append(view.size)
        # the view is a crop: find where it sits by its position stored in `view.info`
        ox, oy = view.info.get("origin", (0, 0))
        out = []
        for sq in self.squares:
            local = Box(sq.x1 - ox, sq.y1 - oy, sq.x2 - ox, sq.y2 - oy)
            inside = local.clip(*view.size)
            if inside.area > 0 and inside.width >= self.min_share * view.size[0]:
                out.append(Detection(inside, "square", 0.9 - 0.001 * len(out), "fake"))
        return out


_ORIGINAL_CROP = Image.Image.crop


class _Image:
    """An image whose crops remember their origin, so the fake detector can place the squares."""

    def __init__(self, size: tuple[int, int]) -> None:
        self.image = Image.new("RGB", size)
        self.image.info["origin"] = (0, 0)

    @staticmethod
    def crop_with_origin(image: Image.Image, box: tuple[int, int, int, int]) -> Image.Image:
        crop = _ORIGINAL_CROP(image, box)
        ox, oy = image.info.get("origin", (0, 0))
        crop.info["origin"] = (ox + box[0], oy + box[1])
        return crop


@pytest.fixture()
def remembering_crops(monkeypatch):
    monkeypatch.setattr(Image.Image, "crop", _Image.crop_with_origin)


def test_a_small_thing_missed_whole_is_found_on_a_tile_in_image_pixels(remembering_crops):
    small = Box(100, 80, 170, 150)  # 70 px in a 1200 px wide image: under 10% whole, over 10% of a tile
    detect = _SeesLargeSquares([small])
    image = _Image((1200, 900)).image
    assert detect(image) == []
    found = tiles.sliced_detect(detect, image, TilesConfig())
    assert [d.box for d in found] == [small]
    assert len(detect.views) == 1 + 1 + 4  # the probe above, the whole image, four tiles


def test_a_thing_found_whole_and_on_tiles_is_one_thing(remembering_crops):
    big = Box(400, 300, 800, 600)  # straddles every inner seam of a 2x2 grid
    inside = Box(150, 100, 350, 300)  # seen whole, and inside the first tile away from its seams
    found = tiles.sliced_detect(_SeesLargeSquares([big, inside]), _Image((1200, 900)).image, TilesConfig())
    assert sorted((d.box.x1, d.box.y1) for d in found) == [(150, 100), (400, 300)]


def test_on_miss_looks_at_tiles_only_when_the_whole_image_shows_nothing(remembering_crops):
    seen_whole, small = Box(150, 100, 350, 300), Box(900, 700, 970, 770)  # 70 px: seen on a tile only
    cfg = TilesConfig(when="on_miss")
    detect = _SeesLargeSquares([seen_whole, small])
    found = tiles.sliced_detect(detect, _Image((1200, 900)).image, cfg)
    assert [d.box for d in found] == [seen_whole] and len(detect.views) == 1  # the tiles were not looked at
    detect = _SeesLargeSquares([small])
    assert [d.box for d in tiles.sliced_detect(detect, _Image((1200, 900)).image, cfg)] == [small]
    assert len(detect.views) == 1 + 4
    always = tiles.sliced_detect(_SeesLargeSquares([seen_whole, small]), _Image((1200, 900)).image, TilesConfig())
    assert sorted(d.box.x1 for d in always) == [150, 900]


def test_a_find_cut_by_an_inner_seam_is_dropped(remembering_crops):
    # Too narrow to be seen whole (under 20% of 1200 px) and wider than the tiles' overlap: each tile sees
    # a part of it that ends at a seam, so nothing is added (half a thing is not a thing).
    across = Box(480, 100, 700, 160)
    found = tiles.sliced_detect(_SeesLargeSquares([across], min_share=0.2), _Image((1200, 900)).image, TilesConfig())
    assert found == []


def test_small_images_and_a_one_tile_grid_are_seen_whole_only(remembering_crops):
    for cfg, size in [(TilesConfig(min_side=500), (480, 360)), (TilesConfig(grid=1), (2000, 1500))]:
        detect = _SeesLargeSquares([Box(10, 10, 60, 60)])
        tiles.sliced_detect(detect, _Image(size).image, cfg)
        assert len(detect.views) == 1


def test_tiling_is_off_by_default_and_an_empty_mapping_turns_it_on():
    assert load_config("default").vision.find_tiles is None
    assert VisionConfig(find_tiles={}).find_tiles == TilesConfig()
    with pytest.raises(ValueError):
        TilesConfig(overlap=0.5)
    with pytest.raises(ValueError):
        TilesConfig(when="sometimes")


@pytest.mark.slow
def test_nanodet_finds_a_bus_small_in_a_large_photo_only_on_tiles(embedded_toolbox):
    """A real photo shrunk into a corner of a large grey canvas: whole, the detector's 416 px input makes the
    bus too small to see; a tile shows it at twice the size."""
    from hydra_vr.assets import sample_image

    src = Image.open(sample_image("bus")).convert("RGB")
    canvas = Image.new("RGB", (1600, 1200), (128, 128, 128))
    canvas.paste(src.resize((src.width * 3 // 10, src.height * 3 // 10)), (200, 150))
    detector = embedded_toolbox.backend("detector")
    assert detector.detect(canvas, ["bus"]) == []
    found = tiles.sliced_detect(lambda view: detector.detect(view, ["bus"]), canvas, TilesConfig())
    assert len(found) == 1
    assert found[0].box.iou(Box(200, 150 + 0.2 * 324, 200 + 243, 150 + 0.7 * 324)) > 0.5
