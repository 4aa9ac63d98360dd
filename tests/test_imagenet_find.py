"""find() for names no detector class means but an ImageNet class does: the name mapping, and the real
classifier's class activation regions on the real sample photos (boxes from benchmarks/real_photos)."""

from __future__ import annotations

import pytest
from PIL import Image

from hydra_vr.api.backends.imagenet import class_indices, imagenet_classes
from hydra_vr.api.types import Box

ROCKET = ("missile", "projectile", "space shuttle")


@pytest.mark.parametrize(
    ("name", "classes"),
    [
        ("rocket", ROCKET),
        ("the rockets", ROCKET),
        ("a toy space shuttle", ("space shuttle",)),
        ("Space Shuttle", ("space shuttle",)),
        ("the helmet", ("crash helmet", "football helmet", "pickelhaube")),
        ("her hat", ("sombrero", "cowboy hat", "bearskin")),
        ("the old tower behind the trees", ("bell cote", "stupa", "water tower", "obelisk", "palace", "monastery")),
        ("a bright orange flower", ("daisy", "yellow lady's slipper")),  # "orange" is its colour, not the fruit
        ("the square traffic sign by the road", ("street sign",)),
        ("a park bench", ("park bench",)),
        ("his sunglasses", ("sunglasses", "sunglass")),  # ImageNet's synonym, then the garment table's plain word
        ("Windsor tie", ("windsor tie",)),
        ("the woman in the grey coat", ()),  # the woman is the head noun; no ImageNet class is a person
        # clothes worn on the body are read on each person's body part by describe, not looked for
        ("uniform", ()), ("her uniform jacket", ()), ("black coat", ()), ("a suit", ()), ("jeans", ()),
        ("the badge on his chest", ()),  # a badge; "chest" (of drawers) is after the preposition
        ("fuel tank", ()),  # "tank" is an army tank to ImageNet: left out
        ("light", ()),  # ImageNet's "light" is a cigarette lighter
        ("the rocky island in the lake", ()),
        ("", ()),
    ],
)
def test_names_map_to_the_imagenet_classes_they_mean(name: str, classes: tuple[str, ...]) -> None:
    assert imagenet_classes(name) == classes


def test_a_definition_is_the_classifier_class_own_sense_else_the_everyday_one() -> None:
    from hydra_vr.api.backends.imagenet import definition

    assert "electronic device" in definition("mouse")  # ImageNet's mouse is the computer's, not the rodent
    assert "canine" in definition("wolf")  # no ImageNet class is named "wolf": the word's everyday sense
    assert definition("qwertyuiop") is None


def test_every_mapped_class_is_a_real_imagenet_class() -> None:
    from hydra_vr.api.backends.imagenet import WORDS, _name_table

    for word, classes in WORDS.items():
        assert len(class_indices(classes)) >= len(classes), word  # "crane" and "maillot" name two classes each
    assert all(class_indices(classes) for classes in _name_table().values())


def _iou(det_box: Box, box: list[int]) -> float:
    return det_box.iou(Box(*box))


@pytest.mark.parametrize(
    ("photo_name", "name", "box", "labels"),
    [
        ("astronaut", "the helmet", [276, 343, 512, 512], {"crash helmet", "football helmet"}),
        ("china", "the pagoda", [62, 28, 372, 425], {"palace", "monastery", "stupa", "bell cote"}),
        ("grace_hopper", "her hat", [153, 22, 372, 185], {"sombrero", "cowboy hat", "bearskin"}),
    ],
)
def test_find_locates_what_the_classifier_sees(embedded_toolbox, photo, photo_name, name, box, labels) -> None:
    image = Image.open(photo(photo_name)).convert("RGB")
    dets, meta = embedded_toolbox.look_for(image, name)
    assert dets and dets[0].source == "classifier" and dets[0].label in labels
    assert _iou(dets[0].box, box) >= 0.5
    assert 0.1 <= dets[0].score <= 1.0 and not meta.get("unsearchable")
    assert "looked where the image classifier sees" in meta["mapping"]


def test_find_through_the_classifier_finds_nothing_where_there_is_none(embedded_toolbox, photo) -> None:
    bus = Image.open(photo("bus")).convert("RGB")
    for name in ("rocket", "helmet", "pagoda", "flower"):
        dets, meta = embedded_toolbox.look_for(bus, name)
        assert dets == [], name
        # the classifier's miss is weak evidence: the step is told no tool could look, as before
        assert meta["unsearchable"] and meta["mapping"].endswith("it saw none")


def test_a_colour_in_the_name_keeps_only_finds_of_that_colour(embedded_toolbox, photo) -> None:
    astronaut = Image.open(photo("astronaut")).convert("RGB")
    dets, _ = embedded_toolbox.look_for(astronaut, "helmet")
    black, meta = embedded_toolbox.look_for(astronaut, "black helmet")  # it is black
    assert black and [d.box for d in black] == [d.box for d in dets] and "pixels are black" in meta["mapping"]
    pink, meta = embedded_toolbox.look_for(astronaut, "pink helmet")
    assert pink == [] and meta["unsearchable"]


def test_without_a_classifier_such_names_stay_unsearchable(photo) -> None:
    from hydra_vr.api import VisionToolbox
    from hydra_vr.config import load_config

    cfg = load_config("default", ["vision.classifier=null"])
    toolbox = VisionToolbox(cfg.vision, cache_dir=cfg.cache_path)
    dets, meta = toolbox.look_for(Image.open(photo("china")).convert("RGB"), "pagoda")
    assert dets == [] and meta["unsearchable"] and "classifier" not in meta.get("mapping", "")


def test_the_imagepatch_find_returns_the_region(embedded_toolbox, photo) -> None:
    from hydra_vr.api.image_patch import bind_toolbox

    patch_cls = bind_toolbox(embedded_toolbox)
    china = patch_cls(Image.open(photo("china")))
    towers = china.find("tower")
    assert towers and towers[0].horizontal_center < china.width / 2  # the pagoda stands on the left
    assert china.find("rocket") == []


def test_a_detector_class_the_detector_missed_is_looked_for_by_the_classifier(embedded_toolbox, photo) -> None:
    # NanoDet finds the two men on this sample photo but not the black tie of the one on the left;
    # the classifier (Windsor tie) does, below the man's face
    image = Image.open(photo("zidane")).convert("RGB")
    assert "tie" not in {d.label for d in embedded_toolbox.backend("detector").detect_classes(image)}
    dets, meta = embedded_toolbox.look_for(image, "a tie")
    assert dets and dets[0].source == "classifier" and dets[0].label == "Windsor tie"
    assert dets[0].score >= embedded_toolbox.config.missed_by_detector_score
    face = embedded_toolbox.backend("faces").detect_faces(image)[0].box
    assert dets[0].box.x1 < face.x2 and dets[0].box.y2 > face.y2  # below the face, not off in the crowd
    assert "the detector found none" in meta["mapping"] and not meta.get("unsearchable")


def test_a_detector_miss_the_classifier_does_not_see_stays_a_miss(embedded_toolbox, photo) -> None:
    from hydra_vr.api import VisionToolbox
    from hydra_vr.api.tools import search_settles
    from hydra_vr.config import load_config

    coffee = Image.open(photo("coffee")).convert("RGB")
    for name in ("dog", "car", "banana"):  # classes of both; none on a cup of coffee
        dets, meta = embedded_toolbox.look_for(coffee, name)
        assert dets == [] and not search_settles(0, meta), name
    cfg = load_config("default", ["vision.missed_by_detector_score=null"])  # switched off: the detector's miss only
    off = VisionToolbox(cfg.vision, cache_dir=cfg.cache_path)
    dets, meta = off.look_for(Image.open(photo("zidane")).convert("RGB"), "a tie")
    assert dets == [] and "classifier" not in meta.get("mapping", "")
