"""Does a refactor cost the HYDRA loop time? Two commits' bench_agent.py, side by side in one run.

    python benchmarks/bench_refactor.py                      # before the strategy seam vs HEAD
    python benchmarks/bench_refactor.py --before REV --after REV --rounds 2 --limit 6

Each commit is checked out in a temporary git worktree and its own ``benchmarks/bench_agent.py``
runs there (same LLM, same vision models, same questions, the LLM disk cache off), alternating
A B A B ... so drift of the machine (heat, other load) falls on both sides alike. Prints every
run's median and, per side, the median over all its question timings. Run it on an idle machine:
the two sides are only comparable when nothing else competes for the cores.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The commit before the strategy seam (ef39292, issue 12): HYDRA's loop as it was.
SEAM_PARENT = "ef39292^"
ROW = re.compile(r"^(\w+)\s+.{36}\s+(\d+\.\d)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(.*)$")


def run_side(tree: Path, limit: int) -> tuple[list[float], list[str]]:
    """Run ``tree``'s bench_agent.py; per-question seconds and answers."""
    env = {**os.environ, "PYTHONPATH": str(tree)}  # beats the editable install of the main checkout
    out = subprocess.run([sys.executable, "benchmarks/bench_agent.py", "--limit", str(limit)], cwd=tree, env=env,
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"bench_agent.py failed in {tree}:\n{out.stderr[-3000:]}")
    seconds, answers = [], []
    for line in out.stdout.splitlines():
        m = ROW.match(line)
        if m:
            seconds.append(float(m.group(2)))
            answers.append(m.group(7).strip())
    return seconds, answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default=SEAM_PARENT, help="commit A (default: the parent of the strategy seam)")
    parser.add_argument("--after", default="HEAD", help="commit B (default: HEAD)")
    parser.add_argument("--rounds", type=int, default=2, help="A B pairs to run")
    parser.add_argument("--limit", type=int, default=6, help="questions of bench_agent.py per run")
    args = parser.parse_args()

    revs = {}
    for label, rev in (("before", args.before), ("after", args.after)):
        sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True)
        if sha.returncode != 0:
            sys.exit(f"unknown commit {rev!r}: {sha.stderr.strip()}")
        revs[label] = sha.stdout.strip()
    times: dict[str, list[float]] = {k: [] for k in revs}
    with tempfile.TemporaryDirectory(prefix="bench_refactor_") as tmp:
        trees = {}
        try:
            for label, sha in revs.items():
                trees[label] = Path(tmp) / label
                subprocess.run(["git", "worktree", "add", "--detach", str(trees[label]), sha], cwd=ROOT, check=True,
                               capture_output=True)
            print(f"before = {revs['before']} ({args.before}), after = {revs['after']} ({args.after}); "
                  f"{args.rounds} rounds of {args.limit} questions, 1.5B, LLM disk cache off")
            for r in range(1, args.rounds + 1):
                for label in ("before", "after"):
                    seconds, answers = run_side(trees[label], args.limit)
                    times[label] += seconds
                    print(f"round {r} {label:<6} median {statistics.median(seconds):5.1f} s  "
                          f"per question {' '.join(f'{s:.1f}' for s in seconds)}  answers {answers}", flush=True)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
    for label in ("before", "after"):
        ts = times[label]
        print(f"{label:<6} {revs[label]}: median {statistics.median(ts):.1f} s over {len(ts)} question runs "
              f"(mean {statistics.mean(ts):.1f} s)")


if __name__ == "__main__":
    main()
