"""Dataset loaders against tiny fixtures in the official schemas (tests/fixtures/datasets).

Images are real pictures shipped with scikit-image, copied at test time under the COCO / GQA
file names so that the committed fixtures stay a few kilobytes.
"""

from __future__ import annotations

import json
import pickle
import shutil
from collections import OrderedDict
from pathlib import Path

import pytest
from skimage import data_dir

from hydra_vr.datasets import DatasetError, MissingFileError, Sample, check_images, load_dataset
from hydra_vr.datasets.easyvqa import easy_vqa_answers, easy_vqa_data_dir
from hydra_vr.registry import UnknownComponentError

FIXTURES = Path(__file__).parent / "fixtures" / "datasets"
SKIMAGE = Path(data_dir)


def _copy_image(src: str, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SKIMAGE / src, dst)  # PIL reads by content, so a PNG under a .jpg name is fine


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES, tmp_path, dirs_exist_ok=True)
    return tmp_path


# --------------------------------------------------------------------------------------------
# GQA
# --------------------------------------------------------------------------------------------


def test_gqa_testdev_balanced_keeps_string_ids_and_meta(root: Path) -> None:
    gqa = root / "gqa"
    _copy_image("chelsea.png", gqa / "images" / "n161313.jpg")
    _copy_image("astronaut.png", gqa / "images" / "2354786.jpg")

    samples = load_dataset("gqa", gqa)  # default split: testdev balanced
    assert [s.id for s in samples] == ["20968379", "201307251", "20543396"]
    first = samples[0]
    assert first.image_path == gqa / "images" / "n161313.jpg"
    assert first.meta["imageId"] == "n161313"
    assert (first.query, first.answer, first.answers, first.task) == (
        "Is there a cup to the left of the cat?", "yes", ["yes"], "vqa"
    )
    assert first.meta["types"]["structural"] == "verify"
    assert first.meta["isBalanced"] is True
    assert first.meta["groups"]["local"] == "13-cat_cup"
    assert samples[1].meta["fullAnswer"] == "The astronaut is wearing the suit."
    assert check_images(samples) == []
    assert samples[1].load_image().size == (512, 512)
    assert len(load_dataset("gqa", gqa, split="testdev", limit=2)) == 2


def test_gqa_test_split_without_answers(root: Path) -> None:
    samples = load_dataset("gqa", root / "gqa", split="test")
    assert [s.id for s in samples] == ["n1234567", "n7654321"]
    assert all(s.answer is None and s.answers == [] for s in samples)
    assert samples[0].meta["isBalanced"] is True and "types" not in samples[0].meta


def test_gqa_train_all_is_read_from_chunks_in_numeric_order(root: Path) -> None:
    samples = load_dataset("gqa", root / "gqa", split="train", version="all")
    assert [s.query for s in samples] == ["chunk 1 question", "chunk 2 question", "chunk 10 question"]
    assert len(load_dataset("gqa", root / "gqa", split="train", version="all", limit=2)) == 2


def test_gqa_image_dir_option(root: Path) -> None:
    samples = load_dataset("gqa", root / "gqa", image_dir=root / "elsewhere")
    assert samples[0].image_path == root / "elsewhere" / "n161313.jpg"


def test_gqa_missing_file_names_it(root: Path) -> None:
    with pytest.raises(MissingFileError, match=r"val_balanced_questions\.json"):
        load_dataset("gqa", root / "gqa", split="val")
    with pytest.raises(DatasetError, match="unknown GQA split"):
        load_dataset("gqa", root / "gqa", split="dev")


def test_gqa_malformed_json_names_the_file(root: Path) -> None:
    path = root / "gqa" / "questions" / "testdev_balanced_questions.json"
    path.write_text(path.read_text()[:-20])
    with pytest.raises(DatasetError, match=r"testdev_balanced_questions\.json: malformed JSON"):
        load_dataset("gqa", root / "gqa")


def test_gqa_missing_field_names_file_record_and_field(root: Path) -> None:
    path = root / "gqa" / "questions" / "testdev_balanced_questions.json"
    data = json.loads(path.read_text())
    del data["201307251"]["imageId"]
    path.write_text(json.dumps(data))
    with pytest.raises(DatasetError, match=r"testdev_balanced_questions\.json: question '201307251' is missing field 'imageId'"):
        load_dataset("gqa", root / "gqa")


def test_gqa_wrong_top_level_type(root: Path) -> None:
    path = root / "gqa" / "questions" / "testdev_balanced_questions.json"
    path.write_text(json.dumps([{"question": "q", "imageId": "1"}]))
    with pytest.raises(DatasetError, match=r"testdev_balanced_questions\.json: expected a JSON object .* got list"):
        load_dataset("gqa", root / "gqa")


# --------------------------------------------------------------------------------------------
# OK-VQA
# --------------------------------------------------------------------------------------------


def test_okvqa_joins_ten_answers_and_uses_coco2014_names(root: Path) -> None:
    samples = load_dataset("okvqa", root / "okvqa", coco_root=root / "coco")
    assert [s.id for s in samples] == ["2971475", "3932255"]
    s = samples[0]
    assert s.image_path == root / "coco" / "val2014" / "COCO_val2014_000000297147.jpg"
    assert len(s.answers) == 10 and s.answers.count("race") == 4
    assert s.answer == "race"  # 4-4 tie with "racing": first seen wins
    assert samples[1].answer == "curiosity"
    assert s.meta == {
        "dataset": "okvqa", "split": "val", "question_id": 2971475, "image_id": 297147,
        "question_type": "one", "answer_type": "other",
    }
    # "test" is val2014
    assert [t.id for t in load_dataset("ok-vqa", root / "okvqa", split="test")] == ["2971475", "3932255"]


def test_okvqa_missing_images_are_reported_lazily(root: Path) -> None:
    samples = load_dataset("okvqa", root / "okvqa")  # loads although no image exists
    missing = check_images(samples)
    assert missing == [s.image_path for s in samples]
    with pytest.raises(MissingFileError, match="COCO_val2014_000000297147.jpg"):
        check_images(samples, raise_on_missing=True)
    with pytest.raises(MissingFileError, match=r"COCO_val2014_000000393225\.jpg of sample 3932255"):
        samples[1].load_image()
    _copy_image("coffee.png", samples[1].image_path)
    assert check_images(samples) == [samples[0].image_path]
    assert samples[1].load_image().mode == "RGB"


def test_okvqa_missing_annotation_field(root: Path) -> None:
    path = root / "okvqa" / "mscoco_val2014_annotations.json"
    data = json.loads(path.read_text())
    del data["annotations"][1]["answers"]
    path.write_text(json.dumps(data))
    with pytest.raises(DatasetError, match=r"mscoco_val2014_annotations\.json: annotation of question 3932255 is missing field 'answers'"):
        load_dataset("okvqa", root / "okvqa")


def test_okvqa_missing_annotations_file(root: Path) -> None:
    (root / "okvqa" / "mscoco_val2014_annotations.json").unlink()
    with pytest.raises(DatasetError, match=r"mscoco_val2014_annotations\.json: file not found"):
        load_dataset("okvqa", root / "okvqa")


# --------------------------------------------------------------------------------------------
# A-OKVQA
# --------------------------------------------------------------------------------------------


def test_aokvqa_val(root: Path) -> None:
    samples = load_dataset("aokvqa", root / "aokvqa", coco_root=root / "coco")
    assert [s.id for s in samples] == ["22jbM6gDxdaMaunuzgrsBB", "2EJ5aw4gJvwSiAxo7cjGs6"]
    s = samples[0]
    assert s.image_path == root / "coco" / "val2017" / "000000461751.jpg"
    assert s.choices == ["toothpick", "food", "popsicle stick", "cigarette"]
    assert (s.correct_choice, s.answer) == (3, "cigarette")
    assert s.answers == ["cigarette"] * 10
    assert s.meta["difficult_direct_answer"] is False and len(s.meta["rationales"]) == 3
    assert samples[1].meta["difficult_direct_answer"] is True


def test_aokvqa_test_split_has_no_answers(root: Path) -> None:
    (s,) = load_dataset("a-okvqa", root / "aokvqa", split="test")
    assert (s.answer, s.correct_choice, s.answers) == (None, None, [])
    assert s.choices == ["suit", "spacesuit", "robe", "apron"]
    assert s.image_path == root / "aokvqa" / "test2017" / "000000000023.jpg"


def test_aokvqa_wrong_top_level_type(root: Path) -> None:
    path = root / "aokvqa" / "aokvqa_v1p0_val.json"
    path.write_text(json.dumps({"questions": json.loads(path.read_text())}))
    with pytest.raises(DatasetError, match=r"aokvqa_v1p0_val\.json: expected a JSON list .* got dict"):
        load_dataset("aokvqa", root / "aokvqa")


# --------------------------------------------------------------------------------------------
# RefCOCO family
# --------------------------------------------------------------------------------------------


def _py2_pickle(obj: object) -> bytes:
    """Protocol-0 pickle as Python 2 wrote it: str as byte strings (opcode S), here latin-1."""
    return _py2_body(obj) + b"."


def _py2_body(obj: object) -> bytes:
    if isinstance(obj, dict):
        return b"(d" + b"".join(_py2_body(k) + _py2_body(v) + b"s" for k, v in obj.items())
    if isinstance(obj, list):
        return b"(l" + b"".join(_py2_body(v) + b"a" for v in obj)
    if isinstance(obj, bool) or not isinstance(obj, int | str):
        raise TypeError(obj)
    if isinstance(obj, int):
        return b"I%d\n" % obj
    escaped = obj.encode("latin-1").replace(b"\\", b"\\\\").replace(b"'", b"\\'")
    return b"S'" + escaped + b"'\n"


def _sentence(sent_id: int, sent: str, raw: str | None = None) -> dict:
    return {"tokens": sent.split(), "raw": raw or sent, "sent_id": sent_id, "sent": sent}


REFS = [
    {"sent_ids": [1, 2], "file_name": "COCO_train2014_000000581857_1719310.jpg", "ann_id": 1719310,
     "ref_id": 0, "image_id": 581857, "split": "testA", "category_id": 1,
     "sentences": [_sentence(1, "man in white suit", "Man in white suit"), _sentence(2, "astronaut")]},
    {"sent_ids": [3], "file_name": "COCO_train2014_000000000042_53.jpg", "ann_id": 53,
     "ref_id": 1, "image_id": 42, "split": "testB", "category_id": 17,
     "sentences": [_sentence(3, "cat on the sofa", "cat on the sofa, café style")]},
    {"sent_ids": [4], "file_name": "COCO_train2014_000000000042_54.jpg", "ann_id": 54,
     "ref_id": 2, "image_id": 42, "split": "val", "category_id": 17,
     "sentences": [_sentence(4, "tiny thing top left")]},
]


@pytest.fixture
def refcoco(root: Path) -> Path:
    (root / "refcoco" / "refcoco" / "refs(unc).p").write_bytes(_py2_pickle(REFS))
    return root / "refcoco"


def test_refcoco_one_sample_per_sentence_with_xyxy_boxes(refcoco: Path) -> None:
    samples = load_dataset("refcoco", refcoco)  # default unc testA
    assert [s.id for s in samples] == ["1", "2"]
    assert [s.query for s in samples] == ["man in white suit", "astronaut"]
    for s in samples:
        assert s.task == "grounding" and s.answer is None
        # bbox [100, 20, 200.5, 480] (xywh) -> xyxy
        assert s.box == (100.0, 20.0, 300.5, 500.0)
        assert s.image_path == refcoco / "train2014" / "COCO_train2014_000000581857.jpg"
        assert s.meta["ref_id"] == 0 and s.meta["ann_id"] == 1719310 and s.meta["category"] == "person"
    assert samples[0].meta["raw"] == "Man in white suit"


def test_refcoco_latin1_pickle_and_other_splits(refcoco: Path) -> None:
    (s,) = load_dataset("refcoco-unc", refcoco, split="testB", coco_root=refcoco / "coco")
    assert s.meta["raw"] == "cat on the sofa, café style"  # needed the latin1 fallback
    assert s.box == (120.25, 40.0, 320.25, 290.5)
    assert s.image_path == refcoco / "coco" / "train2014" / "COCO_train2014_000000000042.jpg"
    assert [t.id for t in load_dataset("refcoco", refcoco, split="val")] == ["4"]
    assert len(load_dataset("refcoco", refcoco, limit=1)) == 1


def test_refcoco_box_matches_the_image(refcoco: Path) -> None:
    (s, _) = load_dataset("refcoco", refcoco)
    _copy_image("astronaut.png", s.image_path)
    w, h = s.load_image().size
    x1, y1, x2, y2 = s.box
    assert 0 <= x1 < x2 <= w and 0 <= y1 < y2 <= h


def test_refcoco_split_by_and_variant_names(refcoco: Path) -> None:
    folder = refcoco / "refcoco"
    (folder / "refs(google).p").write_bytes(pickle.dumps([{**REFS[1], "split": "val"}]))
    assert [s.id for s in load_dataset("refcoco", refcoco, split_by="google")] == ["3"]
    assert [s.meta["split_by"] for s in load_dataset("refcoco-google", refcoco)] == ["google"]
    with pytest.raises(DatasetError, match="has no split_by 'umd'"):
        load_dataset("refcoco", refcoco, split_by="umd")
    # refcocog-umd looks in refcocog/refs(umd).p
    with pytest.raises(MissingFileError, match=r"refcocog/refs\(umd\)\.p"):
        load_dataset("refcocog-umd", refcoco)


def test_refcoco_unknown_split_lists_available(refcoco: Path) -> None:
    with pytest.raises(DatasetError, match=r"no refs in split 'test'; available: testA, testB, val"):
        load_dataset("refcoco", refcoco, split="test")


def test_refcoco_accepts_the_dataset_folder_itself(refcoco: Path) -> None:
    samples = load_dataset("refcoco", refcoco / "refcoco", coco_root=refcoco)
    assert [s.id for s in samples] == ["1", "2"]


def test_refcoco_missing_annotation_is_an_error(refcoco: Path) -> None:
    path = refcoco / "refcoco" / "instances.json"
    data = json.loads(path.read_text())
    data["annotations"] = [a for a in data["annotations"] if a["id"] != 53]
    path.write_text(json.dumps(data))
    with pytest.raises(DatasetError, match=r"instances\.json: no annotation with id 53"):
        load_dataset("refcoco", refcoco, split="testB")


def test_refcoco_refuses_pickles_that_load_classes(refcoco: Path) -> None:
    (refcoco / "refcoco" / "refs(unc).p").write_bytes(pickle.dumps([OrderedDict(REFS[0])]))
    with pytest.raises(DatasetError, match=r"refs\(unc\)\.p: not a readable pickle .*OrderedDict"):
        load_dataset("refcoco", refcoco)


def test_refcoco_missing_sentence_field(refcoco: Path) -> None:
    broken = [{**REFS[0], "sentences": [{"sent_id": 9, "raw": "x"}]}]
    (refcoco / "refcoco" / "refs(unc).p").write_bytes(pickle.dumps(broken))
    with pytest.raises(DatasetError, match=r"refs\(unc\)\.p: sentence 9 of ref 0 is missing field 'sent'"):
        load_dataset("refcoco", refcoco)


# --------------------------------------------------------------------------------------------
# User files
# --------------------------------------------------------------------------------------------


def test_user_jsonl(tmp_path: Path) -> None:
    _copy_image("chelsea.png", tmp_path / "imgs" / "cat.png")
    lines = [
        {"image": "imgs/cat.png", "question": "Which animal is on the sofa?", "answers": ["cat", "cat", "kitten"]},
        {"id": "g1", "image": str(tmp_path / "imgs" / "cat.png"), "question": "the cat", "box": [10, 20, 30, 40], "note": "x"},
        {"image": "imgs/cat.png", "question": "Where is the cat?", "answer": "sofa", "box": "1,2,3,4"},
        {"image": "imgs/cat.png", "question": "the nose", "task": "grounding"},
    ]
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    a, b, c, d = load_dataset("user", path)
    assert (a.task, a.answer, a.answers, a.id) == ("vqa", "cat", ["cat", "cat", "kitten"], "mine-0")
    assert a.image_path == tmp_path / "imgs" / "cat.png" and check_images([a, b]) == []
    assert (b.task, b.box, b.answer, b.id, b.meta["note"]) == ("grounding", (10.0, 20.0, 30.0, 40.0), None, "g1", "x")
    assert (c.task, c.box, c.answers) == ("vqa", (1.0, 2.0, 3.0, 4.0), ["sofa"])  # answer given: VQA
    assert (d.task, d.box) == ("grounding", None)


def test_user_csv_and_folder_lookup(tmp_path: Path) -> None:
    (tmp_path / "test.csv").write_text(
        "image,question,answers,box,choices,correct_choice\n"
        "a.jpg,What color?,red|red|dark red,,red|blue,0\n"
        'b.jpg,the left dog,,"5,6,50,60",,\n'
    )
    a, b = load_dataset("user", tmp_path, split="test")
    assert (a.answers, a.answer, a.choices, a.correct_choice) == (["red", "red", "dark red"], "red", ["red", "blue"], 0)
    assert a.image_path == tmp_path / "a.jpg"
    assert (b.task, b.box, b.answers) == ("grounding", (5.0, 6.0, 50.0, 60.0), [])
    with pytest.raises(MissingFileError, match="data.jsonl or data.csv"):
        load_dataset("user", tmp_path)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"image": "a.jpg"}', r"bad\.jsonl: line 1 is missing column 'question'"),
        ('{"image": "a.jpg", "question": "q", "box": "1,2,3"}', r"bad\.jsonl: line 1: box should be"),
        ('{"image": "a.jpg", "question": "q", "box": "10,2,3,4"}', r"x1 <= x2"),
        ('{"image": "a.jpg", "question": "q", "task": "caption"}', r"task should be"),
        ('{"image": "a.jpg", "question": "q"', r"bad\.jsonl: line 1 is not valid JSON"),
        ('["a.jpg", "q"]', r"bad\.jsonl: line 1 should be a JSON object"),
    ],
)
def test_user_errors_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(DatasetError, match=message):
        load_dataset("user", path)


# --------------------------------------------------------------------------------------------
# easy-VQA (the real installed package) and the registry
# --------------------------------------------------------------------------------------------


def test_easy_vqa_from_the_installed_package() -> None:
    test = load_dataset("easy-vqa", None)
    assert len(test) == 9673  # as the package's README states
    answers = set(easy_vqa_answers())
    assert len(answers) == 13 and {"yes", "no", "circle", "teal"} <= answers
    assert all(s.answer in answers and s.answers == [s.answer] for s in test)
    assert {s.task for s in test} == {"vqa"}
    assert len({s.id for s in test}) == len(test)
    first = test[0]
    assert first.image_path == easy_vqa_data_dir() / "test" / "images" / f"{first.meta['image_id']}.png"
    assert first.load_image().size == (64, 64)
    assert check_images(test[:200]) == []
    train = load_dataset("easy_vqa", None, split="train", limit=5)
    assert len(train) == 5 and train[0].id == "easy-vqa-train-0"


def test_unknown_dataset_lists_available_names(tmp_path: Path) -> None:
    with pytest.raises(UnknownComponentError, match="available: .*gqa.*refcocog-umd"):
        load_dataset("vqav3", tmp_path)
    with pytest.raises(DatasetError, match="needs data_root"):
        load_dataset("gqa", None)


def test_custom_loader_registration(tmp_path: Path) -> None:
    from hydra_vr.datasets import default_dataset_registry

    def tiny(data_root: Path, split: str | None, limit: int | None, **options: object) -> list[Sample]:
        return [Sample(id=f"{split}-{options['tag']}", image_path=data_root / "x.jpg", query="q", task="vqa")]

    registry = default_dataset_registry()
    registry.register("tiny", tiny)
    (s,) = load_dataset("tiny", tmp_path, split="dev", registry=registry, tag="t")
    assert s.id == "dev-t"
    assert "tiny" not in default_dataset_registry()  # each registry is fresh: no global state


def test_sample_rejects_bad_task_and_box() -> None:
    with pytest.raises(ValueError, match="task"):
        Sample(id="1", image_path=Path("x"), query="q", task="caption")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="4 numbers"):
        Sample(id="1", image_path=Path("x"), query="q", task="grounding", box=(1.0, 2.0, 3.0))  # type: ignore[arg-type]
