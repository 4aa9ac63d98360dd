"""The labelled questions asked straight: ``simple_query(question)`` on the whole photo, no program.

    python benchmarks/real_photos/direct.py --ids runs-2026-11-25/vqa-b36710f/ids.txt --out runs/direct.jsonl
    python benchmarks/real_photos/direct.py --out runs/direct.jsonl --against runs-2026-11-26/vqa-b386176/vipergpt

The first asks every VQA question of ``--ids`` of the default profile's describe backend (appending to
``--out``; a stopped run resumes where it stopped). ``--against RUN`` then compares the answers with a
run's: how often they agree and how right they are then, which questions only one of them gets, and
what a perfect choice between the two would score. Scored like the runs: right when the answer matches
any of the labelled alternatives.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent


def ask(ids: list[str], out: Path, overrides: list[str]) -> None:
    import hydra_vr
    from PIL import Image

    from hydra_vr.assets import sample_image

    questions = {r["id"]: r for r in _rows(HERE / "questions.jsonl")}
    done = {r["id"] for r in _rows(out)} if out.exists() else set()
    patch = hydra_vr.load(overrides=overrides)
    with out.open("a") as sink:
        for qid in ids:
            q = questions[qid]
            if qid in done or q.get("task") == "grounding":
                continue
            image = Image.open(sample_image(q["image"].split(":", 1)[1])).convert("RGB")
            t0 = time.perf_counter()
            answer = patch(image).simple_query(q["question"])
            sink.write(json.dumps({"id": qid, "question": q["question"], "answer": answer, "answers": q["answers"],
                                   "seconds": round(time.perf_counter() - t0, 1)}) + "\n")
            sink.flush()
            print(f"{qid}: {answer!r}", flush=True)


def compare(out: Path, run: Path) -> None:
    from hydra_vr.eval.metrics import any_answer_match

    direct = {r["id"]: r for r in _rows(out)}
    if run.is_file():  # a summary (summarize_run.py): its questions carry prediction and score
        program = {r["id"]: r for r in json.loads(run.read_text())["questions"] if r.get("task") != "grounding"}
    else:
        program = {r["id"]: r for r in _rows(run / "results.jsonl")}
    categories = {r["id"]: r.get("category", "?") for r in _rows(HERE / "questions.jsonl")}
    shared = [i for i in direct if i in program]
    per: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    agree = agree_right = either = 0
    only: dict[str, list[str]] = {"direct": [], "program": []}
    for i in shared:
        d = any_answer_match(str(direct[i]["answer"]), direct[i]["answers"])
        p = float(program[i]["score"])
        row = per[categories.get(i, "?")]
        row[0] += 1
        row[1] += d
        row[2] += p
        either += max(d, p) > 0
        if str(direct[i]["answer"]).strip().lower() == str(program[i]["prediction"]).strip().lower():
            agree += 1
            agree_right += p > 0
        elif d != p:
            only["direct" if d else "program"].append(f"{i} {direct[i]['answer']!r} / {program[i]['prediction']!r}")
    n = len(shared)
    print(f"{n} questions: direct {sum(r[1] for r in per.values()) / n:.1%}, program {sum(r[2] for r in per.values()) / n:.1%}, "
          f"either (a perfect choice) {either / n:.1%}")
    print(f"the same answer on {agree} ({agree_right} right); different on {n - agree}")
    for who, ids in only.items():
        print(f"right only {who} ({len(ids)}): direct / program answers")
        for line in ids:
            print("  " + line)
    print("per category: n, direct right, program right")
    for cat, (k, d, p) in sorted(per.items()):
        print(f"  {cat:10s} {k:3d} {d:5.0f} {p:5.0f}")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ids", help="file of question ids to ask (one per line, relative to this folder or absolute)")
    ap.add_argument("--out", required=True, type=Path, help="answers (JSONL; appended to, so a stopped run resumes)")
    ap.add_argument("--against", type=Path,
                    help="a run folder (with results.jsonl), or its summary JSON, to compare the answers with")
    ap.add_argument("--set", dest="overrides", action="append", default=["llm.options.cache=false"],
                    help="config override (default: llm.options.cache=false)")
    args = ap.parse_args()
    if args.ids:
        ids_path = Path(args.ids) if Path(args.ids).is_absolute() else HERE / args.ids
        ask([line.strip() for line in ids_path.read_text().splitlines() if line.strip()], args.out, args.overrides)
    if args.against:
        compare(args.out, args.against if args.against.is_absolute() else HERE / args.against)


if __name__ == "__main__":
    main()
