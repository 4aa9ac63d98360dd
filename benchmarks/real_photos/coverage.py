"""What the offline tools can ground at all: the ceiling of Acc@0.5 on the labelled expressions.

    python benchmarks/real_photos/coverage.py [--config default] [--split dev|test|all] [--show]

No LLM. For every grounding expression of ``questions.jsonl`` it takes the expression's names (the
same ``expression_names`` the grounding fallback uses), asks which of them the toolbox can look
for at all (a detector class or synonym, OCR for text names, the face detector for faces, outlines
for shapes and round things), as ``find`` itself says (its ``unsearchable`` mark), and keeps the
best IoU of any box found for the searchable names: an oracle that
always picks the right box. Expressions where no name is searchable fail for lack of a model
whatever the agent does; the rest bound what a perfect loop could reach with these tools.

For expressions that place their thing ("the top left coin", "the person on the far right", "the
biggest coin"; ``hydra_vr.api.placement``) it also scores the box that place picks among the first
name's results (as the grounding fallback and ``best_image_match`` do): how close the choice by
geometry alone comes to the oracle. Likewise for expressions that tell a person by the colour of what
they wear ("the man in the black coat"): the box the pixels of that body part pick, where they tell
(else no pick, and the LLM would be asked), and for expressions that tell their thing by another it is with
or on ("the man holding a bottle"): the box that other thing, looked for in the photo, picks. All three picks
are ``hydra_vr.api.choose``'s; beside each, how often the first box (the most confident find, a program's
``found[0]``) is right on the same expressions: what the cue adds.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=Path, default=HERE / "questions.jsonl")
    parser.add_argument("--config", default="default")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="all",
                        help="one half of the labelled set (each question's split field); --show never prints test")
    parser.add_argument("--show", action="store_true", help="one line per expression")
    args = parser.parse_args()

    from PIL import Image

    from hydra_vr.api.names import expression_names
    from hydra_vr.api.choose import choose, cue
    from hydra_vr.api.toolbox import VisionToolbox
    sys.path.insert(0, str(HERE))
    from fetch_photos import image_file
    from hydra_vr.config import load_config
    from hydra_vr.eval.metrics import box_iou

    cfg = load_config(args.config)
    tb = VisionToolbox(cfg.vision, cache_dir=cfg.cache_path)
    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if "box" in r and args.split in ("all", r.get("split"))]
    if args.show and any(r.get("split") == "test" for r in rows):  # a file without splits (your own) may show all
        parser.error("--show prints per-expression results: not for test questions (report-only); use --split dev")
    verdicts: Counter[str] = Counter()
    # (IoU of the pick or None, IoU of the first box, oracle IoU) by the cue the expression tells its thing by
    told: dict[str, list[tuple[float | None, float, float]]] = {"place": [], "worn": [], "other": []}
    for row in rows:
        image = Image.open(image_file(row["image"])).convert("RGB")
        with tb.recording() as calls:  # find() says itself when it cannot look for a name
            for name in expression_names(row["question"]):
                tb.find(image, name)
        calls = [c for c in calls if c.tool == "find"]  # (find("text") records its read_text too)
        usable = [c.args["name"] for c in calls if not c.meta.get("unsearchable")]
        best, best_name = 0.0, None
        for call in calls:
            for det in call.result:
                iou = box_iou(det.box.to_list(), row["box"])
                if iou > best:
                    best, best_name = iou, call.args["name"]
        verdict = ("no searchable name" if not usable else
                   "found (oracle IoU >= 0.5)" if best >= 0.5 else "searchable, no box overlaps")
        verdicts[verdict] += 1
        said, pick_iou, how = cue(row["question"]), None, ""
        first = next((c for c in calls if c.result), None)
        if first is not None and said is not None:
            boxes = [d.box.to_list() for d in first.result]
            how = "place" if said.where is not None else "worn" if said.worn is not None else "other"
            # one box is every caller's pick; among several, the cue's (the other thing looked for as the re-pick does)
            idx = 0 if len(boxes) == 1 else choose(said, boxes, lambda: [image.crop(tuple(b)) for b in boxes],
                                                   lambda name: [d.box.to_list() for d in tb.find(image, name)])
            pick_iou = box_iou(boxes[idx], row["box"]) if idx is not None else None
            told[how].append((pick_iou, box_iou(boxes[0], row["box"]), best))
        if args.show:
            shown = f" {how} {pick_iou:4.2f}" if pick_iou is not None else f" {how} -" if how else ""
            print(f"{row['id']:<18} {row['question'][:42]:<42} {verdict:<28} IoU {best:4.2f}{shown} "
                  f"{best_name or '-':<10} searchable: {', '.join(usable) or '-'}")
    n = len(rows)
    print(f"\n{n} grounding expressions ({args.questions.name}, split {args.split}), tools of config {args.config!r}:")
    for verdict in ("found (oracle IoU >= 0.5)", "searchable, no box overlaps", "no searchable name"):
        print(f"  {verdict:<28} {verdicts[verdict]:3d}  ({100 * verdicts[verdict] / n:.1f}%)")
    print(f"ceiling of Acc@0.5 with these tools and a perfect choice among their boxes: "
          f"{100 * verdicts['found (oracle IoU >= 0.5)'] / n:.1f}%")
    for how, what in (("place", "name a place or size"), ("worn", "tell a person by the colour of what they wear"),
                      ("other", "tell their thing by another it is with or on")):
        picks = told[how]
        print(f"expressions that {what} and find something: {len(picks)}; the {how} picks a box in "
              f"{sum(p is not None for p, _, _ in picks)}, with IoU >= 0.5 in {sum(p is not None and p >= 0.5 for p, _, _ in picks)} "
              f"(the first box there: {sum(p is not None and f >= 0.5 for p, f, _ in picks)}, in all: "
              f"{sum(f >= 0.5 for _, f, _ in picks)}; the oracle: {sum(o >= 0.5 for _, _, o in picks)})")

if __name__ == "__main__":
    main()
