"""Which VQA failures are for lack of a model and which are the loop's, for one or more runs.

    python benchmarks/real_photos/gaps.py RUN [RUN ...] [--show]

A RUN is a run folder or its summary (``summaries/*.json``, see ``summarize_run.py``).

``gaps.yaml`` lists the labelled questions no offline tool can answer from the photo, each with the
kind of perception it needs (attribute, part, identity, class, measure, handwriting). For each run
(its stored predictions re-scored with the current scorer, as ``paired.py`` does) this prints the
accuracy on the questions the offline tools can answer in principle and on the others, the gap
questions by kind, and the reachable questions the run got wrong: failures of the loop, the LLM, or
a tool that has the class but missed the thing. ``--show`` also lists the gap questions answered.

Kind ``miss`` is the exception to "written from what the tools can look for": the detector has the
class, but on this photo it scores the thing far under its threshold (the boats, the phone, the
spoon, the bench). ``--check`` backs each such entry with the detector's best score for that class
on the photo (it loads the detector; no LLM) and fails when one reaches the threshold.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import yaml

from paired import _records  # type: ignore[import-not-found]  # the sibling script's re-scoring

HERE = Path(__file__).resolve().parent


def load_gaps(path: Path = HERE / "gaps.yaml") -> dict[str, tuple[str, str]]:
    """id -> (kind, what is missing)."""
    out = {}
    for qid, text in (yaml.safe_load(path.read_text()) or {}).items():
        kind, _, what = str(text).partition(" - ")
        out[str(qid)] = (kind.strip(), what.strip() or kind.strip())
    return out


def check_misses(gaps: dict[str, tuple[str, str]], questions: Path = HERE / "questions.jsonl") -> bool:
    """Print the detector's best score for each ``miss`` entry's class on its photo; True when all are under
    the detector's threshold (the entry still holds)."""
    import json

    import numpy as np
    from PIL import Image

    import hydra_vr
    from hydra_vr.api.backends.nanodet import COCO_CLASSES
    from hydra_vr.assets import sample_image

    rows = {r["id"]: r for r in map(json.loads, questions.read_text().splitlines()) if r.get("id")}
    detector = hydra_vr.load()._toolbox.backend("detector")
    ok = True
    for qid, (kind, what) in sorted(gaps.items()):
        if kind != "miss":
            continue
        name = what.split(" (")[0].strip()
        image = Image.open(sample_image(rows[qid]["image"].split(":", 1)[1])).convert("RGB")
        _, scores = detector.raw_detections(image)
        best = float(np.max(scores[:, COCO_CLASSES.index(name)]))
        holds = best < detector.score_threshold
        ok &= holds
        print(f"  {qid:26s} {name:12s} best score {best:.3f} (threshold {detector.score_threshold})"
              f"{'' if holds else '  <- found: not a miss any more'}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", type=Path, help="run folders holding results.jsonl, or summaries/*.json")
    parser.add_argument("--gaps", type=Path, default=HERE / "gaps.yaml")
    parser.add_argument("--show", action="store_true", help="also list the gap questions and their answers")
    parser.add_argument("--check", action="store_true", help="back the 'miss' entries with the detector's scores")
    args = parser.parse_args()
    gaps = load_gaps(args.gaps)
    if args.check and not check_misses(gaps):
        raise SystemExit("a 'miss' entry of gaps.yaml is found by the detector now: move it back")
    for run in args.runs:
        recs = {k: r for k, r in _records(run).items() if r.get("task") == "vqa"}
        unknown = sorted(k for k in gaps if k not in recs)
        groups: dict[str, list[float]] = defaultdict(list)
        kinds: dict[str, list[float]] = defaultdict(list)
        for qid, r in recs.items():
            score = float(r.get("score") or 0.0)
            if qid in gaps:
                groups["gap"].append(score)
                kinds[gaps[qid][0]].append(score)
            else:
                groups["reachable"].append(score)
        print(f"== {run}  ({len(recs)} VQA questions)")
        for name, label in (("reachable", "the offline tools can answer"), ("gap", "need a model the profile lacks")):
            s = groups[name]
            acc = f"{100 * sum(s) / len(s):5.1f}%" if s else "  n/a"
            print(f"  {label:32s} {len(s):4d} questions  accuracy {acc}  ({sum(s):.0f} right)")
        for kind, s in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
            print(f"    {kind:12s} {len(s):3d}  right {sum(s):.0f}")
        if unknown and len(recs) >= len(gaps):
            print(f"  gaps.yaml ids not in this run: {', '.join(unknown)}")
        wrong = [(qid, r) for qid, r in recs.items() if qid not in gaps and float(r.get("score") or 0.0) < 1.0]
        print(f"  reachable and wrong ({len(wrong)}): the loop's, the LLM's or a tool's miss")
        for qid, r in sorted(wrong):
            gt = r.get("gt", {}).get("answers") or [r.get("gt", {}).get("answer")]
            print(f"    {qid:26s} {r.get('query', '')[:62]:62s} -> {str(r.get('prediction'))[:22]!s:22s} (gt {gt[0]})")
        if args.show:
            print("  gap questions:")
            for qid, r in sorted((q, r) for q, r in recs.items() if q in gaps):
                print(f"    {qid:26s} [{gaps[qid][0]}: {gaps[qid][1]}] -> {r.get('prediction')} score {r.get('score')}")


if __name__ == "__main__":
    main()
