"""Picking one of several patches by where the description places it ("the person on the far right").

The 1.5B wrote ``people[-1]`` for a person "on the far right" and ``people[0]`` for one "at the left
edge"; find() lists by detector score, so both grounded the wrong person. (The same on the labelled bus
photo, with its labelled expressions and boxes: tests/snapshots/test_placement_snapshots.py.)
"""

from __future__ import annotations

import pytest

from hydra_vr.api.placement import Placement, pick, placement


@pytest.mark.parametrize(
    ("text", "x", "y", "size"),
    [
        ("the girl standing on the far right", 1.0, None, None),
        ("the cyclist half hidden at the left edge", 0.0, None, None),
        ("the leftmost cup", 0.0, None, None),
        ("the top left tile", 0.0, 0.0, None),
        ("the bottom right stamp", 1.0, 1.0, None),
        ("the small bird in the bottom right corner", 1.0, 1.0, None),  # a place outranks a size
        ("the boat at the bottom", None, 1.0, None),
        ("the upper window", None, 0.0, None),
        ("the middle cake", 0.5, 0.5, None),
        ("the middle left window", 0.0, 0.5, None),
        ("the biggest coin", None, None, "big"),
        ("the big yellow balloon", None, None, "big"),
        ("the smallest dog", None, None, "small"),
        ("the tall tower", None, None, "tall"),
        ("the tall tree on the far left", 0.0, None, None),
        # how near the camera: the nearest of one kind is the largest box, the farthest the smallest
        ("the sheep nearest to the camera", None, None, "big"),
        ("the tram in the foreground", None, None, "big"),
        ("the cyclist farthest from the viewer", None, None, "small"),
        ("the yacht in the background", None, None, "small"),
        ("the goat in the foreground on the right", 1.0, None, None),  # a place on the frame outranks it
        ("the nearest upper shutter", None, 0.0, None),  # any word of a place, not only left/right/top/bottom
        ("the leftmost lamp in the background", 0.0, None, None),
        ("the nearest tram", None, None, "big"),  # before its noun: nearest to the camera
        ("the furthest kayak", None, None, "small"),
    ],
)
def test_where_a_description_places_its_thing(text: str, x: float | None, y: float | None, size: str | None) -> None:
    where = placement(text)
    assert where is not None and (where.x, where.y, where.size) == (x, y, size)


@pytest.mark.parametrize(
    "text",
    [
        "the woman in the red coat",
        "the thin pole just left of the van",  # a relation to another thing
        "the cup to the right of the laptop",
        "the weather vane on top of the barn",
        "the arrow pointing to the right",  # a direction, not a place
        "the dog facing left",
        "the woman in the black tank top",  # clothing
        "the man in the top hat",
        "the cyclist in the yellow top",  # a top a colour names is worn
        "the girls in green tops",
        "the cars from left to right",
        "the dog next to the bench",
        "",
    ],
)
def test_descriptions_that_place_nothing(text: str) -> None:
    assert placement(text) is None


@pytest.mark.parametrize("text", ["the top blue kite", "the blue kite at the top", "the kite in the top row"])
def test_a_top_no_colour_names_is_still_a_place(text: str) -> None:
    assert placement(text) == Placement(y=0.0, words=("top",))


_ROW = [[300, 10, 400, 200], [0, 20, 80, 210], [650, 0, 800, 190], [120, 15, 260, 205]]  # by score, not by place
_GRID = [[x, y, x + 40, y + 40] for y in (10, 110, 210) for x in (10, 110, 210)]  # 3 x 3, row by row


def test_pick_by_place_and_size() -> None:
    assert pick(_ROW, placement("the far right person")) == 2
    assert pick(_ROW, placement("the person on the left")) == 1
    assert pick(_GRID, placement("the top left tile")) == 0
    assert pick(_GRID, placement("the top right tile")) == 2
    assert pick(_GRID, placement("the bottom right tile")) == 8
    assert pick(_GRID, placement("the coin at the bottom left")) == 6
    assert pick(_GRID, placement("the coin in the middle")) == 4
    assert pick(_ROW, placement("the biggest one")) == 2
    sizes = [[0, 0, 10, 10], [0, 0, 30, 30], [0, 0, 20, 40]]
    assert pick(sizes, placement("the biggest box")) == 1
    assert pick(sizes, placement("the smallest box")) == 0
    assert pick(sizes, placement("the tallest box")) == 2
    with pytest.raises(ValueError):
        pick([], Placement(x=0.0))


def test_rows_and_columns_of_boxes() -> None:
    from hydra_vr.api.placement import rows

    assert rows(_GRID) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert rows(_GRID, columns=True) == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    jittered = [[x, y + (7 if x == 110 else 0), x + 40, y + 40 + (7 if x == 110 else 0)] for x, y, *_ in _GRID]
    assert [len(r) for r in rows(jittered)] == [3, 3, 3]  # a coin a little lower is still in its row
    assert rows(_ROW) == [[1, 3, 0, 2]]  # one row, left to right
    assert rows([]) == []


def test_hydra_step_limit_merge_takes_the_placed_patch_of_a_list() -> None:
    # HYDRA's merge after the step limit reads the steps' variables; of a list of patches it took the
    # first (by score); the expression's place now picks
    from hydra_vr.agent.strategies.hydra import last_patch_boxes
    from hydra_vr.memory import MemoryEntry, StateMemoryBank

    memory = StateMemoryBank("the coin in the bottom right corner")
    memory.add(MemoryEntry(1, "find the coins", "coins = ImagePatch(image).find('coin')", "24 found",
                           variables=[{"name": "image_patch", "box": [0, 0, 300, 300]}, {"name": "coins", "boxes": _GRID}]))
    assert last_patch_boxes(memory, (300, 300), "the coin in the bottom right corner") == [_GRID[8]]
    assert last_patch_boxes(memory, (300, 300), "the coin at the top right") == [_GRID[2]]
    assert last_patch_boxes(memory, (300, 300), "a coin") == [_GRID[0]]  # no place: the first, as before
    assert last_patch_boxes(memory, (300, 300)) == [_GRID[0]]


@pytest.mark.parametrize("text", ["the lamp nearest to the sofa", "the lamp nearest the sofa", "the front tyre",
                                  "the bench in front of the fountain"])
def test_nearness_to_another_thing_or_a_front_part_places_nothing(text: str) -> None:
    assert placement(text) is None


def test_the_thing_nearest_the_camera_is_the_largest_of_its_kind() -> None:
    boxes = [[10, 10, 40, 40], [100, 50, 220, 200], [300, 30, 340, 80]]
    assert pick(boxes, placement("the cow closest to the camera")) == 1
    assert pick(boxes, placement("the cow in the background")) == 0


@pytest.mark.parametrize(("text", "index"), [
    ("the second kayak from the left", 3),
    ("the third lamp post from the right", 3),
    ("first from the left", 1),
    ("the fifth bottle from the left", 0),  # fewer candidates than the count: the last one
])
def test_a_thing_counted_from_an_edge(text: str, index: int) -> None:
    boxes = [[60, 0, 70, 10], [0, 0, 10, 10], [40, 0, 50, 10], [20, 0, 30, 10]]  # left to right: 1, 3, 2, 0
    assert pick(boxes, placement(text)) == index


def test_a_count_from_the_top_runs_down_the_column() -> None:
    boxes = [[0, 80, 10, 90], [0, 0, 10, 10], [0, 40, 10, 50]]
    assert pick(boxes, placement("the second shelf from the top")) == 2
    assert pick(boxes, placement("the second shelf from the bottom")) == 2
    assert pick(boxes, placement("the top shelf")) == 1
