"""Compare eval runs of the same user file question by question (before/after a change, or strategies).

    python benchmarks/real_photos/paired.py RUN_BEFORE RUN_AFTER [--show]
    python benchmarks/real_photos/paired.py runs/hydra runs/vipergpt runs/hammr runs/avis runs/hierva
    python benchmarks/real_photos/paired.py summaries/runs-2026-11-26__vqa-fefce57__vipergpt.json \
        summaries/runs-2026-11-26__vqa-52be6ab__vipergpt.json

A run is a run folder (holding ``results.jsonl``) or its summary (``summarize_run.py``'s JSON in
``summaries/``). Re-scores the run folders' stored predictions with the current scorer (a summary's
scores are taken as they were summarised: it keeps no ground truth), keeps the samples every run
finished (a paired comparison is fair even when a run was cut short), and prints for each run:
VQA accuracy, grounding Acc@0.5 and mIoU, the share of VQA answers whose type does not fit the
question, median seconds per sample; the mean score per category, a column per run; then the
questions whose score differs between the runs (every question with --show).
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any


def _summary_records(path: Path) -> dict[str, dict[str, Any]]:
    """A ``summarize_run.py`` summary's questions as records (their scores as summarised)."""
    import json

    summary = json.loads(path.read_text())
    labels: dict[str, Any] = {}  # the labelled answers, to show (a summary keeps no ground truth)
    questions = Path(__file__).resolve().parent / "questions.jsonl"
    if summary.get("dataset") == "user" and questions.is_file():
        labels = {r["id"]: r for r in map(json.loads, questions.read_text().splitlines()) if r.get("id")}
    records = {}
    for q in summary["questions"]:
        grounding = q.get("task") == "grounding"
        records[q["id"]] = {
            "id": q["id"], "task": q.get("task", "vqa"), "query": q.get("q") or "",
            "prediction": None if grounding else q.get("prediction"),
            "boxes": [q["prediction"]] if grounding and q.get("prediction") else [],
            "score": q.get("score") if q.get("score") is not None else 0.0,
            "scores": {"iou": q.get("iou", 0.0)} if grounding else {},
            "gt": {**({"answers": labels[q["id"]]["answers"]} if "answers" in labels.get(q["id"], {}) else {}),
                   **({"choices": q["choices"]} if q.get("choices") else {})},
            "meta": {"category": q.get("category")}, "wall_seconds": q.get("seconds"),
        }
    return records


def _records(run: Path) -> dict[str, dict[str, Any]]:
    """The run's records re-scored in memory (read-only: works while the run is still going); a
    summary file's as summarised."""
    import json

    if run.is_file():
        return _summary_records(run)

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
    parser.add_argument("runs", type=Path, nargs="+",
                        help="two runs (before, after) or more (strategies side by side): run folders or summary JSON files")
    parser.add_argument("--show", action="store_true", help="print every paired question, not only the changed ones")
    args = parser.parse_args()
    if len(args.runs) < 2:
        parser.error("give at least two runs")
    stems = [r.stem if r.is_file() else r.name for r in args.runs]
    names = [stem if stems.count(stem) == 1 else str(r) for stem, r in zip(stems, args.runs)]
    recs = [_records(r) for r in args.runs]
    common = [i for i in recs[0] if all(i in r for r in recs[1:])]
    print(f"{len(common)} samples finished in every run ({', '.join(f'{n} {len(r)}' for n, r in zip(names, recs))})")
    width = max(8, *map(len, names))
    cols = ["vqa_n", "vqa_acc", "misfit", "ground_n", "acc05", "miou", "median_s"]
    print(f"{'run':<{width}} " + " ".join(f"{c:>9}" for c in cols))
    for name, r in zip(names, recs):
        s = _summary([r[i] for i in common])
        print(f"{name:<{width}} " + " ".join(f"{_fmt(s[c]):>9}" for c in cols))
    by_cat: dict[str, list[list[float]]] = defaultdict(list)
    for i in common:
        by_cat[(recs[0][i].get("meta") or {}).get("category", "-")].append([r[i]["score"] for r in recs])
    print("\nper category, mean score (" + " | ".join(names) + "):")
    for cat, rows in sorted(by_cat.items()):
        means = " | ".join(f"{statistics.mean(row[k] for row in rows):.2f}" for k in range(len(recs)))
        print(f"  {cat:<11} n={len(rows):<3} {means}")
    print("\nquestions:" if args.show else "\nchanged:")
    for i in common:
        scores = [r[i]["score"] for r in recs]
        if args.show or len(set(scores)) > 1:
            answers = " | ".join(f"{str(r[i].get('prediction'))[:18]!r} ({r[i]['score']:.2f})" for r in recs)
            print(f"  {i:<22} {recs[0][i]['query'][:44]:<44} {answers}")


if __name__ == "__main__":
    main()
