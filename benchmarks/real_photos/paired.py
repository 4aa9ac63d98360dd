"""Compare two eval runs of the same user file question by question (before/after a change).

    python benchmarks/real_photos/paired.py RUN_BEFORE RUN_AFTER [--show]

Re-scores both runs' stored predictions with the current scorer, keeps the samples both runs
finished (a paired comparison is fair even when a run was cut short), and prints for each run:
VQA accuracy, grounding Acc@0.5 and mIoU, the share of VQA answers whose type does not fit the
question, median seconds per sample, per category; then the questions whose score changed.
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any


def _records(run: Path) -> dict[str, dict[str, Any]]:
    """The run's records re-scored in memory (read-only: works while the run is still going)."""
    import json

    from hydra_vr.eval.rescore import rescore_records, run_dataset

    lines = [line for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line the running eval has not finished writing
    return {r["id"]: r for r in rescore_records(records, run_dataset(run)).records}


def _summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    from hydra_vr.answer_types import expected_type

    vqa = [r for r in records if r.get("task") == "vqa"]
    ground = [r for r in records if r.get("task") == "grounding"]
    misfit = [r for r in vqa if expected_type(r["query"], (r.get("gt") or {}).get("choices")).check(r.get("prediction") or "")]
    ious = [float((r.get("scores") or {}).get("iou", 0.0)) for r in ground]
    return {
        "vqa_n": len(vqa), "vqa_acc": 100 * statistics.mean(r["score"] for r in vqa) if vqa else None,
        "misfit": 100 * len(misfit) / len(vqa) if vqa else None,
        "ground_n": len(ground), "acc05": 100 * statistics.mean(i >= 0.5 for i in ious) if ious else None,
        "miou": 100 * statistics.mean(ious) if ious else None,
        "median_s": statistics.median(float(r.get("wall_seconds") or r.get("seconds") or 0) for r in records) if records else None,
    }


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.1f}" if isinstance(v, float) else str(v)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--show", action="store_true", help="print every paired question, not only the changed ones")
    args = parser.parse_args()
    a, b = _records(args.before), _records(args.after)
    common = [i for i in a if i in b]
    print(f"{len(common)} samples finished in both runs ({len(a)} before, {len(b)} after)")
    cols = ["vqa_n", "vqa_acc", "misfit", "ground_n", "acc05", "miou", "median_s"]
    print(f"{'run':<8} " + " ".join(f"{c:>9}" for c in cols))
    for name, recs in (("before", a), ("after", b)):
        s = _summary([recs[i] for i in common])
        print(f"{name:<8} " + " ".join(f"{_fmt(s[c]):>9}" for c in cols))
    by_cat: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for i in common:
        by_cat[(a[i].get("meta") or {}).get("category", "-")].append((a[i]["score"], b[i]["score"]))
    print("\nper category (before -> after, mean score):")
    for cat, pairs in sorted(by_cat.items()):
        print(f"  {cat:<11} n={len(pairs):<3} {statistics.mean(p[0] for p in pairs):.2f} -> {statistics.mean(p[1] for p in pairs):.2f}")
    print("\nquestions:" if args.show else "\nchanged:")
    for i in common:
        if args.show or a[i]["score"] != b[i]["score"]:
            print(f"  {i:<22} {a[i]['query'][:48]:<48} {str(a[i].get('prediction'))!r:>14} ({a[i]['score']:.2f}) -> "
                  f"{str(b[i].get('prediction'))!r} ({b[i]['score']:.2f})")


if __name__ == "__main__":
    main()
