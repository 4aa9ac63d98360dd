"""Shapes by outline (hydra_vr/api/shapes.py): how often the kind is right, and how long it takes.

    python benchmarks/bench_shapes.py [--images 150]

No LLM, no detector. Three parts:
- easy-VQA test images whose shape the questions give away ("what is the red shape?" -> triangle,
  "does the image contain a circle?" -> yes): is the best-fitting outline of the right kind?
- easy-VQA shapes cropped to their colour region, as a program's find("blue")[0] hands them over:
  the outline runs along the patch's edge and is measured as a silhouette;
- the sample photos: how many circles each yields (false circles in busy scenes are what a count of
  "wheels" would suffer from) and the best IoU with the labelled round things of
  benchmarks/real_photos/questions.jsonl (coins, the round patch, the wheels, the round sign).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections import Counter
from pathlib import Path

from PIL import Image

from hydra_vr.api.shapes import SHAPE_KINDS, find_shapes
from hydra_vr.api.types import Box

HERE = Path(__file__).resolve().parent
_ROUND_IDS = ("coins-g-1", "coins-g-2", "coins-g-3", "coins-g-4", "coins-g-5", "astronaut-g-5", "motorcycle-g-2",
              "motorcycle-g-3", "bus-g-7")


def easy_vqa(n: int) -> None:
    from hydra_vr.datasets.easyvqa import easy_vqa_data_dir

    data = easy_vqa_data_dir() / "test"
    truth: dict[int, str] = {}
    for question, answer, image_id in json.loads((data / "questions.json").read_text()):
        if answer in SHAPE_KINDS:
            truth[image_id] = answer
        m = re.search(r"(?:contain|there) an? (circle|rectangle|triangle)\b", question)
        if m and "not" not in question and answer == "yes":
            truth[image_id] = m.group(1)
    ids = sorted(truth)[:n]
    outcome: Counter[str] = Counter()
    confusion: Counter[tuple[str, str]] = Counter()
    ms = []
    for i in ids:
        img = Image.open(data / "images" / f"{i}.png")
        t0 = time.perf_counter()
        hits = find_shapes(img)
        ms.append((time.perf_counter() - t0) * 1000)
        said = hits[0].kind if hits else "none"
        outcome["right" if said == truth[i] else "none" if said == "none" else "wrong"] += 1
        confusion[(truth[i], said)] += 1
    print(f"easy-VQA test, {len(ids)} images with a known shape (of {len(truth)}):")
    print(f"  right {outcome['right']} ({100 * outcome['right'] / len(ids):.1f}%), wrong {outcome['wrong']}, "
          f"nothing found {outcome['none']}; median {statistics.median(ms):.1f} ms per image")
    for (want, said), k in sorted(confusion.items()):
        if want != said:
            print(f"  {want} -> {said}: {k}")


def crops(n: int) -> None:
    """The shape of a patch cropped to it, as a program gets it ("what is the blue shape?" ->
    find("blue")[0].simple_query(...)): the question's colour region, cropped, measured alone."""
    from hydra_vr.api.colors import color_regions, is_color_name
    from hydra_vr.datasets.easyvqa import easy_vqa_data_dir

    data = easy_vqa_data_dir() / "test"
    asked: dict[int, tuple[str, str]] = {}
    for question, answer, image_id in json.loads((data / "questions.json").read_text()):
        colour = [w for w in re.findall(r"[a-z]+", question) if is_color_name(w)]
        if answer in SHAPE_KINDS and question.startswith("what is the") and colour:
            asked.setdefault(image_id, (colour[0], answer))
    outcome: Counter[str] = Counter()
    ms = []
    for i in sorted(asked)[:n]:
        colour, kind = asked[i]
        img = Image.open(data / "images" / f"{i}.png").convert("RGB")
        regions = color_regions(img, colour)
        if not regions:
            outcome["no region"] += 1
            continue
        crop = img.crop(tuple(round(v) for v in regions[0][0]))
        t0 = time.perf_counter()
        hits = find_shapes(crop, cropped=True)
        ms.append((time.perf_counter() - t0) * 1000)
        said = hits[0].kind if hits else "none"
        outcome["right" if said == kind else "none" if said == "none" else "wrong"] += 1
    done = outcome["right"] + outcome["wrong"] + outcome["none"]
    print(f"\neasy-VQA test, {sum(outcome.values())} 'what is the <colour> shape?' images, the shape's colour region cropped:")
    print(f"  right {outcome['right']} ({100 * outcome['right'] / max(done, 1):.1f}% of {done} crops), wrong {outcome['wrong']}, "
          f"nothing found {outcome['none']}; no region of that colour {outcome['no region']} (CSS brown reads red, teal blue); "
          f"median {statistics.median(ms or [0]):.1f} ms per crop")


def photos() -> None:
    from hydra_vr.assets import SampleImageError, resolve_image, sample_names

    rows = {r["id"]: r for r in map(json.loads, (HERE / "real_photos" / "questions.jsonl").read_text().splitlines())}
    print("\nsample photos, circles (best IoU with the labelled round things):")
    for name in sample_names():
        try:
            img = Image.open(resolve_image(f"sample:{name}"))
        except SampleImageError as exc:
            print(f"  {name:<13} skipped: {exc}")
            continue
        t0 = time.perf_counter()
        hits = find_shapes(img, ("circle",))
        ms = (time.perf_counter() - t0) * 1000
        labelled = [i for i in _ROUND_IDS if rows[i]["image"] == f"sample:{name}"]
        best = ", ".join(f"{i} {max([h.box.iou(Box(*rows[i]['box'])) for h in hits] or [0.0]):.2f}" for i in labelled)
        print(f"  {name:<13} {len(hits):3d} circles {ms:6.0f} ms  {best}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=150, help="easy-VQA images with a known shape")
    args = parser.parse_args()
    easy_vqa(args.images)
    crops(args.images)
    photos()


if __name__ == "__main__":
    main()
