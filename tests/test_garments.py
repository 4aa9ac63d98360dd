"""What people wear, by body part: the question's part, where it lies, and the colours that tell a person.

(The real classifier and colours on the labelled photos: tests/snapshots/test_garments_snapshots.py.)
"""

from __future__ import annotations

import pytest

from hydra_vr.api import garments


@pytest.mark.parametrize("question, part", [
    ("What has the girl got on her head?", "head"),
    ("Does the rider have a helmet on?", "head"),
    ("What colour is the hair of the woman at the back?", "head"),
    ("What is the woman in the green jacket wearing on her face?", "face"),  # the part asked, not the jacket
    ("How many of the kids wear sunglasses?", "face"),
    ("Does the teacher wear glasses?", "face"),
    ("What is hanging around his neck?", "neck"),
    ("What color is his tie?", "neck"),
    ("What does he have on his feet?", "feet"),
    ("Are her shoes red?", "feet"),
    ("Is he wearing jeans or shorts?", "legs"),
    ("What does the tall man have on over his shirt?", "body"),
    ("What colour is the pilot's uniform jacket?", "body"),
    ("What is the girl wearing?", "body"),
    ("How is the boy dressed?", "body"),
])
def test_the_part_a_question_asks_about(question, part):
    assert garments.worn_part(question) == part


@pytest.mark.parametrize("question", [
    "What color is the tram?", "How many people can you see?", "Is the glass half full or empty?",
    "What is on top of the cake?", "Who is the man with the beard?", "Where is the fork?",
])
def test_questions_about_no_garment(question):
    assert garments.worn_part(question) is None


def test_every_garment_is_an_imagenet_class_of_a_known_part():
    # (and the classes given to dark suits and uniforms on the sample photos are left out)
    from timm.data import ImageNetInfo

    info = ImageNetInfo()
    labels = {info.index_to_description(i).split(",")[0].strip() for i in range(1000)}
    assert set(garments.GARMENTS) <= labels
    assert {part for part, _ in garments.GARMENTS.values()} <= set(garments.PARTS)
    assert garments.garment("sombrero", "head") == "hat"
    assert garments.garment("sombrero", "face") is None  # worn elsewhere
    assert garments.garment("tabby", "body") is None  # no garment
    assert not {"academic gown", "mortarboard", "vestment"} & set(garments.GARMENTS)


def test_part_boxes_from_the_face_and_from_the_person():
    person, face = [100, 100, 300, 700], [170, 130, 230, 200]  # a standing person; the face 60 x 70
    assert garments.face_of(person, [[0, 0, 20, 20], face, [150, 600, 200, 650]]) == face  # in the upper half
    assert garments.face_of(person, [[150, 600, 200, 650]]) is None
    head = garments.part_box(person, "head", face, (1000, 1000))
    assert head[3] < face[3] and head[1] < face[1]  # above the face, down to its brow
    neck = garments.part_box(person, "neck", face, (1000, 1000))
    assert neck[1] > face[1] + 0.5 * (face[3] - face[1])  # below the face
    body = garments.part_box(person, "body", face, (1000, 1000))
    assert body[0] == 100 and body[2] == 300 and body[1] == 200 and body[3] < 700  # from the chin down to the waist
    # no face: shares of the person's box; the feet at its bottom
    assert garments.part_box(person, "feet", None, (1000, 1000)) == [100, 610, 300, 700]
    assert garments.part_box(person, "head", None, (1000, 1000))[1] == 100
    # clipped to the image, and nothing for a part under 8 pixels
    assert garments.part_box([0, 0, 100, 300], "head", [5, 5, 40, 40], (1000, 1000))[:2] == [0, 0]
    assert garments.part_box([0, 0, 20, 20], "face", None, (1000, 1000)) is None


@pytest.mark.parametrize("text, told", [
    ("the boy in the black jacket", ("body", ("black",))),
    ("the woman with gray hair", ("hair", ("gray",))),  # hair by its own names, read around the face (api/hair.py)
    ("the pilot in the orange suit", ("body", ("orange",))),
    ("the girl in the beige coat", ("body", ("brown",))),  # beige reads brown in the pixels
    ("the girl in pink", ("body", ("pink",))),
    ("the boy dressed in all black", ("body", ("black",))),
    ("the red motorcycle", None),
    ("the blue bus", None),
    ("a dog in a red collar", None),
    ("the guard in uniform", None),  # a garment, but no colour
    ("the red hat", None),  # the garment itself, not a person told by it
    ("the woman wearing a red hat", ("head", ("red",))),
    # garments WordNet knows that no word list names, placed by the kind of clothing they are
    ("the cyclist in the yellow top", ("body", ("yellow",))),
    ("the hiker in an orange parka", ("body", ("orange",))),
    ("the child wearing a green beanie", ("head", ("green",))),
    ("the toddler in red sandals", ("feet", ("red",))),
    ("the referee in black shorts", ("legs", ("black",))),
    ("a cat with a white bib", None),  # a cat is no person (WordNet's everyday senses): no garment of one
    ("the taxi with the yellow top", None),
    # a word pattern of clothing after a thing that is no person: its own part, not a garment ("hood", "cap")
    ("the van with the white hood", None),
    ("the bottle with the red cap", None),
    ("the one in the grey hoodie", ("body", ("gray",))),  # names nothing: still a person told by what they wear
])
def test_descriptions_that_tell_a_person_by_the_colour_they_wear(text, told):
    assert garments.worn_colors(text) == told


def _person(face_at: tuple[int, int, int, int], below_face: str, elsewhere: str) -> "Image.Image":
    """A 100x200 person crop painted ``elsewhere`` with a skin-toned face at ``face_at`` and ``below_face`` from the
    face's bottom down 80 pixels: a seated person's shirt sits under the face, wherever the box puts a standing torso."""
    from PIL import Image, ImageDraw

    crop = Image.new("RGB", (100, 200), elsewhere)
    draw = ImageDraw.Draw(crop)
    draw.rectangle([0, face_at[3], 99, min(199, face_at[3] + 80)], fill=below_face)
    draw.rectangle(face_at, fill=(225, 180, 150))
    return crop


def test_a_seated_persons_shirt_is_read_below_the_face_not_in_a_standing_bodys_share():
    # the left one leans in low (face near the middle of the box's height), the right one stands (face near the top)
    low, high = (40, 80, 70, 110), (35, 10, 65, 32)
    left, right = _person(low, "red", "navy"), _person(high, "navy", "navy")
    people, faces = [[0, 0, 100, 200], [200, 0, 300, 200]], [[40, 80, 70, 110], [235, 10, 265, 32]]
    in_crops = garments.faces_in_crops(people, faces)
    # the standing one's face is where the box's own shares put it: those shares place its parts, as before
    assert in_crops == [[40, 80, 70, 110], None]
    assert garments.pick_worn([left, right], "body", ("red",)) is None  # a standing torso's share shows navy on both
    assert garments.pick_worn([left, right], "body", ("red",), faces=in_crops) == 0
    assert garments.faces_in_crops(people, []) == [None, None]  # no face found: the box's shares


def test_choose_looks_for_faces_for_a_colour_worn():
    from hydra_vr.api.choose import choose, cue

    low = (40, 80, 70, 110)
    crops = [_person(low, "red", "navy"), _person((35, 10, 65, 32), "navy", "navy")]
    boxes = [[0, 0, 100, 200], [200, 0, 300, 200]]
    looked: list[str] = []

    def look(name: str) -> list[list[float]]:
        looked.append(name)
        return [[40, 80, 70, 110], [235, 10, 265, 32]] if name == "face" else []

    told = cue("the kid dressed in a red sweater")
    assert told is not None and told.worn == ("body", ("red",))
    assert choose(told, boxes, lambda: crops, look) == 0 and looked == ["face"]
    assert choose(told, boxes, lambda: crops, None) is None  # no look: the box's shares alone, which do not tell
