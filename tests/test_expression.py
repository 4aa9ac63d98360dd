"""Whether a face smiles: the frame's ``smile``, the smile cascade on real faces, and the answer it gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from hydra_vr.api.expression import FaceReading, answer_smile, face_smiles, read_faces
from hydra_vr.api.types import Box, Detection
from hydra_vr.lexicon import wordnet as wn
from hydra_vr.question import parse


@pytest.mark.parametrize(("question", "claims"), [
    ("Is the chef smiling?", {"yes": "smiling", "no": "not smiling"}),
    ("Is he grinning?", {"yes": "smiling", "no": "not smiling"}),  # a pronoun: the last word is the verb
    ("Do the twins smile at the camera?", {"yes": "smiling", "no": "not smiling"}),
    ("Is the clerk smiling or frowning?", {"smiling": "smiling", "frowning": "not smiling"}),
])
def test_frame_reads_a_smile_question(question: str, claims: dict) -> None:
    assert dict(parse(question).smile.claims) == claims


@pytest.mark.parametrize("question", [
    "Is the grinning boy holding a kite?",  # the smile names who is asked about
    "Is the toddler not smiling?",  # negated
    "Is the crowd laughing?",  # laughing is no kind of smiling in WordNet
    "What is the chef holding?",
])
def test_frame_leaves_other_questions(question: str) -> None:
    assert parse(question).smile is None


def test_wordnet_knows_kinds_of_smiling() -> None:
    assert wn.smiles("beaming") and wn.smiles("smirks") and wn.smiles("smile")
    assert not wn.smiles("laughing") and not wn.smiles("frowning") and not wn.smiles("holding")


def _lfw(index: int) -> np.ndarray:
    """One 25 x 25 grey face of the Labeled Faces in the Wild subset that ships inside scikit-image."""
    import skimage

    faces = np.load(Path(skimage.__file__).parent / "data" / "lfw_subset.npy")
    return (faces[index] * 255).astype(np.uint8)


def test_smile_cascade_on_real_faces() -> None:
    # two broad smiles with teeth showing, two closed mouths (looked at by eye)
    assert face_smiles(_lfw(19)) and face_smiles(_lfw(22))
    assert not face_smiles(_lfw(28)) and not face_smiles(_lfw(35))


def test_read_faces_keeps_the_main_faces_and_reads_them() -> None:
    smile, still = _lfw(19), _lfw(35)
    photo = np.full((200, 400), 128, np.uint8)
    photo[20:120, 20:120] = np.asarray(Image.fromarray(smile).resize((100, 100), Image.BICUBIC))
    photo[20:120, 250:350] = np.asarray(Image.fromarray(still).resize((100, 100), Image.BICUBIC))
    image = Image.fromarray(photo).convert("RGB")
    faces = [Detection(Box(20, 20, 120, 120), "face", 0.9, "test"), Detection(Box(250, 20, 350, 120), "face", 0.9, "test"),
             Detection(Box(150, 150, 180, 180), "face", 0.6, "test")]  # a face under half the largest's side is not asked about
    readings = read_faces(image, faces)
    assert [r.smiling for r in readings] == [True, False]
    asked = parse("Is the chef smiling?").smile
    assert answer_smile(readings, asked) is None  # the faces disagree: the backend answers
    assert answer_smile(readings[:1], asked)[0] == "yes"
    assert answer_smile(readings[1:], asked)[0] == "no"
    assert read_faces(image, [Detection(Box(0, 0, 20, 20), "face", 0.9, "test")]) == []  # too small to read


def test_answer_smile_names_the_option() -> None:
    asked = parse("Is the clerk smiling or frowning?").smile
    assert answer_smile([FaceReading(Box(0, 0, 50, 50), False)], asked)[0] == "frowning"
    assert answer_smile([], asked) is None


def test_simple_query_answers_from_the_faces(embedded_toolbox) -> None:
    """Through the toolbox, as a program's simple_query reaches it: the real face detector and smile cascade on two
    commuters with closed mouths."""
    from hydra_vr.assets import resolve_image

    bus = Image.open(resolve_image("sample:bus")).convert("RGB")
    got = embedded_toolbox.simple_query(bus, "Are the two commuters smiling?")
    assert (got.text, got.source) == ("no", "expression")
    assert "not smiling" in got.evidence


def test_a_smile_tells_one_person_from_others() -> None:
    """"the grinning waiter" among people crops: the one whose face smiles; none picked where the faces do not tell."""
    from hydra_vr.api.choose import choose, cue
    from hydra_vr.api.expression import pick_smiling

    def person(face: np.ndarray) -> Image.Image:  # a person's crop, the face at its top
        crop = np.full((260, 120), 90, np.uint8)
        crop[10:110, 10:110] = np.asarray(Image.fromarray(face).resize((100, 100), Image.BICUBIC))
        return Image.fromarray(crop).convert("RGB")

    crops = [person(_lfw(35)), person(_lfw(19)), person(_lfw(28))]
    faces = [[10, 10, 110, 110]] * 3
    assert pick_smiling(crops, faces) == 1
    assert pick_smiling(crops[:1] + crops[2:], faces[:2]) is None  # nobody smiles
    assert pick_smiling(crops[1:2], faces[:1]) is None  # one face read: nothing to tell apart
    assert pick_smiling(crops, [None, [10, 10, 110, 110], None]) is None
    told = cue("the grinning waiter")
    assert told is not None and told.smiling and cue("the laughing waiter") is None
    boxes = [[0, 0, 120, 260], [130, 0, 250, 260], [260, 0, 380, 260]]
    photo_faces = [[10, 10, 110, 110], [140, 10, 240, 110], [270, 10, 370, 110]]
    assert choose(told, boxes, lambda: crops, lambda name: photo_faces if name == "face" else []) == 1
