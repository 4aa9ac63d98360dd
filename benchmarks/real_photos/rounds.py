"""Run several agent designs on the same questions in rounds, so a run stopped at any point is fair.

    python benchmarks/real_photos/rounds.py --out runs/strategies --minutes 60
    python benchmarks/real_photos/rounds.py --out runs/easy --dataset easy-vqa --samples 40 \\
        --run hydra:--strategy=hydra --run vipergpt:--strategy=vipergpt

Each round extends every run by ``--round`` samples (``hydra-vr eval --limit`` on the same run
folder, which resumes), one run after the other, so all runs always hold the same questions give
or take one round; ``--minutes`` stops starting new evals after that long. A run killed or stopped
is resumed by the same command. At the end it prints ``hydra-vr compare --common`` over the runs.

For the labelled real photos the questions are reordered so that any prefix mixes the categories
(shuffled with ``--seed``, then one of each category in turn, grounding included), ``--split dev|test`` keeps one half of the
labelled set (each question's ``split`` field), and ``--ids FILE`` a subset of ids.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import subprocess
import sys
import time
from collections import defaultdict
from itertools import zip_longest
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_RUNS = {s: f"--strategy={s}" for s in ("hydra", "vipergpt", "hammr", "avis", "hierva")}


def _resolved(row: dict) -> dict:
    """``photo:NAME`` (a held-out photo of photos.yaml) as the cached file's absolute path, fetched if needed."""
    image = str(row.get("image", ""))
    if image.startswith("photo:"):
        if str(HERE) not in sys.path:  # once, not once per photo row
            sys.path.insert(0, str(HERE))
        from fetch_photos import image_file

        return {**row, "image": image_file(image)}
    return row


def interleaved(questions: Path, ids: str, dest: Path, split: str = "all", seed: int = 0) -> int:
    """Write the chosen questions (of ``split``: dev, test or all) to ``dest``, categories taking turns;
    returns how many."""
    rows = [json.loads(line) for line in questions.read_text().splitlines() if line.strip()]
    if split != "all":
        rows = [r for r in rows if r.get("split") == split]
    if ids != "all":
        keep = [line.strip() for line in Path(ids).read_text().splitlines() if line.strip()]
        by_id = {r["id"]: r for r in rows}
        missing = [i for i in keep if i not in by_id]
        if missing:
            sys.exit(f"{ids}: ids not in {questions}: {', '.join(missing)}")
        rows = [by_id[i] for i in keep]
    random.Random(seed).shuffle(rows)  # any prefix mixes the photos as well as the categories
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        groups["grounding" if "box" in row else row.get("category", "other")].append(row)
    ordered = [r for turn in zip_longest(*groups.values()) for r in turn if r is not None]
    dest.write_text("".join(json.dumps(_resolved(r)) + "\n" for r in ordered))
    return len(ordered)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="folder holding one run folder per --run")
    parser.add_argument("--run", action="append", default=[], metavar="LABEL:ARGS",
                        help="a run: its folder name and the eval options (default: the five strategies)")
    parser.add_argument("--dataset", default="user", help="user (the labelled real photos) or any eval dataset")
    parser.add_argument("--questions", type=Path, default=HERE / "questions.jsonl")
    parser.add_argument("--ids", default="all", help="a file of ids, or 'all' (every question of --split)")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="all",
                        help="dev (tune on it), test (report only: never read its per-question outputs while designing a rule), or all")
    parser.add_argument("--seed", type=int, default=0, help="the order the questions are shuffled into before categories take turns")
    parser.add_argument("--samples", type=int, default=None, help="at most this many samples per run")
    parser.add_argument("--round", type=int, default=8, help="samples added to every run per round")
    parser.add_argument("--minutes", type=float, default=None, help="start no eval after this many minutes")
    parser.add_argument("--set", action="append", default=[], dest="sets", help="config override for every run")
    parser.add_argument("--hydra-vr", default=str(Path(sys.executable).with_name("hydra-vr")))
    args = parser.parse_args()

    runs = dict(r.split(":", 1) for r in args.run) if args.run else DEFAULT_RUNS
    args.out.mkdir(parents=True, exist_ok=True)
    data: list[str] = ["--dataset", args.dataset]
    total = args.samples
    if args.dataset == "user":
        qfile = args.out / "questions.jsonl"
        n = interleaved(args.questions, args.ids, qfile, args.split, args.seed)
        total = min(total or n, n)
        if total < n:  # a partial run says so: its figures are not the split's
            print(f"running {total} of the {n} questions selected (--samples {args.samples})", flush=True)
        data += ["--data-root", str(qfile)]
    if total is None:
        sys.exit("--samples is needed for a dataset other than user")
    sets = [a for s in args.sets for a in ("--set", s)]
    start = time.monotonic()
    limit = 0
    while limit < total:
        limit = min(limit + args.round, total)
        for label, opts in runs.items():
            if args.minutes is not None and time.monotonic() - start > 60 * args.minutes:
                print(f"stopped after {args.minutes} minutes (round up to {limit} samples)", flush=True)
                limit = total
                break
            cmd = [args.hydra_vr, "eval", *data, "--limit", str(limit), "--out", str(args.out / label),
                   "--no-progress", *shlex.split(opts), *sets]
            t0 = time.monotonic()
            done = subprocess.run(cmd, check=False)
            print(f"[{time.monotonic() - start:7.0f} s] {label}: {limit} samples, exit {done.returncode}, "
                  f"{time.monotonic() - t0:.0f} s", flush=True)
            if done.returncode not in (0, 1):  # 1: some samples failed (kept as errors); other codes: bad input
                sys.exit(done.returncode)
    subprocess.run([args.hydra_vr, "compare", "--common", *(str(args.out / label) for label in runs)], check=False)


if __name__ == "__main__":
    main()
