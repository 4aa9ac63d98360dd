"""RefCOCO / RefCOCO+ / RefCOCOg referring expressions (the ``refer`` release).

``{data_root}/{dataset}/refs({split_by}).p`` is a pickled list of refs without boxes; each ref's
``ann_id`` is joined to ``{data_root}/{dataset}/instances.json``, whose ``bbox`` is COCO
``[x, y, w, h]`` and is converted to xyxy here. One sample per sentence. Images are COCO train2014.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra_vr.datasets.base import Box, DatasetError, Sample, xywh_to_xyxy
from hydra_vr.datasets.coco import coco2014_image, coco_image_id
from hydra_vr.datasets.files import field_of, read_json, read_plain_pickle

# dataset -> {split_by: default split}; testA (people) is the split ViperGPT reports.
SPLIT_BYS: dict[str, dict[str, str]] = {
    "refcoco": {"unc": "testA", "google": "val"},
    "refcoco+": {"unc": "testA"},
    "refcocog": {"umd": "test", "google": "val"},
}
_REFS_WHAT = "a pickled list of refs {ref_id, ann_id, image_id, split, category_id, sentences}"
_INSTANCES_WHAT = 'COCO instances: {"annotations": [{id, bbox [x, y, w, h], ...}], ...}'


def _dataset_dir(data_root: Path, dataset: str) -> Path:
    # The refer layout is data_root/<dataset>/; also accept data_root being that folder itself.
    nested = data_root / dataset
    if not nested.is_dir() and (data_root / "instances.json").is_file():
        return data_root
    return nested


def load_refer(
    dataset: str,
    data_root: Path,
    split: str | None = None,
    limit: int | None = None,
    *,
    split_by: str | None = None,
    coco_root: Path | None = None,
) -> list[Sample]:
    """Load ``dataset`` (refcoco, refcoco+, refcocog) with the ``split_by`` partition.

    ``split_by`` defaults to unc (umd for refcocog); ``split`` to testA (test for refcocog-umd,
    val for google). ``coco_root`` (holding ``train2014/``) defaults to ``data_root``.
    """
    if dataset not in SPLIT_BYS:
        raise DatasetError(f"unknown referring dataset {dataset!r}; expected {', '.join(SPLIT_BYS)}")
    partitions = SPLIT_BYS[dataset]
    split_by = split_by or next(iter(partitions))
    if split_by not in partitions:
        raise DatasetError(
            f"{dataset} has no split_by {split_by!r}; available: {', '.join(partitions)}"
        )
    split = split or partitions[split_by]
    data_root = Path(data_root)
    images = Path(coco_root) if coco_root is not None else data_root
    folder = _dataset_dir(data_root, dataset)

    refs_path = folder / f"refs({split_by}).p"
    refs = read_plain_pickle(refs_path, _REFS_WHAT)
    if not isinstance(refs, list):
        raise DatasetError(f"{refs_path}: expected {_REFS_WHAT}, got {type(refs).__name__}")
    chosen = [r for r in refs if field_of(r, "split", refs_path, "a ref") == split]
    if not chosen:
        available = sorted({r["split"] for r in refs})
        raise DatasetError(
            f"{refs_path}: no refs in split {split!r}; available: {', '.join(available)}"
        )

    inst_path = folder / "instances.json"
    instances = read_json(inst_path, _INSTANCES_WHAT, dict)
    boxes = _boxes_by_ann_id(instances, inst_path)
    categories = {
        c.get("id"): c.get("name") for c in instances.get("categories", []) if isinstance(c, dict)
    }

    samples: list[Sample] = []
    for ref in chosen:
        ref_id = field_of(ref, "ref_id", refs_path, "a ref")
        where = f"ref {ref_id}"
        ann_id = field_of(ref, "ann_id", refs_path, where)
        if ann_id not in boxes:
            raise DatasetError(
                f"{inst_path}: no annotation with id {ann_id} (ann_id of {where} in {refs_path.name})"
            )
        image_id = coco_image_id(
            field_of(ref, "image_id", refs_path, where), f"{refs_path}: {where}"
        )
        category_id = ref.get("category_id")
        for sentence in field_of(ref, "sentences", refs_path, where):
            if limit is not None and len(samples) >= limit:
                return samples
            sent_id = field_of(sentence, "sent_id", refs_path, f"a sentence of {where}")
            samples.append(
                Sample(
                    id=str(sent_id),
                    image_path=coco2014_image(images, "train", image_id),
                    query=field_of(sentence, "sent", refs_path, f"sentence {sent_id} of {where}"),
                    task="grounding",
                    box=boxes[ann_id],
                    meta={
                        "dataset": dataset,
                        "split_by": split_by,
                        "split": split,
                        "ref_id": ref_id,
                        "ann_id": ann_id,
                        "sent_id": sent_id,
                        "image_id": image_id,
                        "category_id": category_id,
                        "category": categories.get(category_id),
                        "raw": sentence.get("raw"),
                    },
                )
            )
    return samples


def _boxes_by_ann_id(instances: dict[str, Any], path: Path) -> dict[Any, Box]:
    annotations = field_of(instances, "annotations", path, "the top-level object")
    if not isinstance(annotations, list):
        raise DatasetError(f"{path}: 'annotations' should be a list, got {type(annotations).__name__}")
    boxes = {}
    for i, ann in enumerate(annotations):
        ann_id = field_of(ann, "id", path, f"annotation #{i}")
        where = f"annotation {ann_id}"
        boxes[ann_id] = xywh_to_xyxy(field_of(ann, "bbox", path, where), f"{path}: {where}")
    return boxes


def load_refcoco(data_root: Path, split: str | None = None, limit: int | None = None, *,
                 split_by: str = "unc", coco_root: Path | None = None) -> list[Sample]:
    """RefCOCO (split_by unc: train/val/testA/testB, or google)."""
    return load_refer("refcoco", data_root, split, limit, split_by=split_by, coco_root=coco_root)


def load_refcoco_google(data_root: Path, split: str | None = None, limit: int | None = None, *,
                        coco_root: Path | None = None) -> list[Sample]:
    return load_refer("refcoco", data_root, split, limit, split_by="google", coco_root=coco_root)


def load_refcoco_plus(data_root: Path, split: str | None = None, limit: int | None = None, *,
                      split_by: str = "unc", coco_root: Path | None = None) -> list[Sample]:
    """RefCOCO+ (split_by unc only)."""
    return load_refer("refcoco+", data_root, split, limit, split_by=split_by, coco_root=coco_root)


def load_refcocog(data_root: Path, split: str | None = None, limit: int | None = None, *,
                  split_by: str = "umd", coco_root: Path | None = None) -> list[Sample]:
    """RefCOCOg (split_by umd: train/val/test, or google)."""
    return load_refer("refcocog", data_root, split, limit, split_by=split_by, coco_root=coco_root)


def load_refcocog_google(data_root: Path, split: str | None = None, limit: int | None = None, *,
                         coco_root: Path | None = None) -> list[Sample]:
    return load_refer("refcocog", data_root, split, limit, split_by="google", coco_root=coco_root)
