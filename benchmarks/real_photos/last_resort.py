"""What grounding's last resort, the region standing out, adds to runs that ended without a box. No LLM.

    python benchmarks/real_photos/last_resort.py summaries/*__no_rl.json [--split dev|test] [--show]

The last resort (``fallback_program(..., last_resort=True)``) runs only after every other step of an episode
found no box, so an expression's result changes only where a run left it without one; there the box is
``colors.standout_region`` of the photo, for an expression of one thing told from no other
(``choose.names_one_thing``). For each expression of ``--split``, the latest of the given run summaries (or run
folders' ``results.jsonl``; later arguments win) says whether it ended without a box; this prints how many of those
the last resort takes, and how many of its boxes reach IoU 0.5, so a run's Acc@0.5 with the change is its own plus
that. ``--show`` lists the expressions (dev only: test is report-only).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _results(path: Path) -> list[dict]:
    """One run's per-question lines: a summary's ``questions`` or a run folder's ``results.jsonl``."""
    if path.is_dir():
        rows = [json.loads(line) for line in (path / "results.jsonl").read_text().splitlines() if line.strip()]
        return [{"id": r["id"], "prediction": r.get("boxes") or None, "score": r.get("score")} for r in rows]
    return json.loads(path.read_text())["questions"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="run summaries or run folders, oldest first")
    parser.add_argument("--questions", type=Path, default=HERE / "questions.jsonl")
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--show", action="store_true", help="one line per expression the last resort takes (dev only)")
    args = parser.parse_args()
    if args.show and args.split == "test":
        parser.error("--show prints per-expression results: not for test questions (report-only)")

    from PIL import Image

    from hydra_vr.api.choose import names_one_thing
    from hydra_vr.api.colors import standout_region
    from hydra_vr.eval.metrics import box_iou
    sys.path.insert(0, str(HERE))
    from fetch_photos import image_file

    rows = {r["id"]: r for r in map(json.loads, args.questions.read_text().splitlines())
            if "box" in r and r.get("split") == args.split}
    latest: dict[str, dict] = {}
    for run in args.runs:
        latest.update({q["id"]: q for q in _results(run) if q["id"] in rows})
    right = sum((q.get("score") or 0) >= 0.5 for q in latest.values())
    unboxed = [i for i, q in latest.items() if not q.get("prediction")]
    fired = [i for i in unboxed if names_one_thing(rows[i]["question"])]
    boxed = hits = 0
    for i in fired:
        region = standout_region(Image.open(image_file(rows[i]["image"])).convert("RGB"))
        iou = box_iou(list(region[0]), rows[i]["box"]) if region else 0.0
        boxed, hits = boxed + (region is not None), hits + (iou >= 0.5)
        if args.show:
            print(f"{i:28s} {rows[i]['question'][:50]:50s} IoU {iou:.2f}")
    print(f"{args.split}: {len(latest)} expressions run, right {right}; without a box {len(unboxed)}, of one thing told "
          f"from no other {len(fired)}; the region standing out boxes {boxed}, IoU >= 0.5 {hits}; "
          f"Acc@0.5 {right} -> {right + hits}")


if __name__ == "__main__":
    main()
