"""Where each strategy stands on the labelled photos now: every question's newest kept answer.

    python benchmarks/real_photos/standing.py                     # dev and test, HYDRA no_rl and vipergpt
    python benchmarks/real_photos/standing.py --categories        # and the score per category
    python benchmarks/real_photos/standing.py --label hammr --markdown

The labelled set is not rerun whole for each change (a 2-core CPU takes about ten hours a strategy); a
change reruns the questions it touches, and ``summaries/`` keeps every run (``summarize_run.py``). A
question's standing answer is the one of the newest run that asked it, runs ordered by the commit they ran
(its place in the history of ``--rev``), or, where that history does not hold the run's commit (a run of a
commit later rebased, or of no recorded commit), by the commit that added the run's summary. So a "before"
rerun at an older commit, summarised after the "after" run, never displaces it. A run at a commit that
``reverted.txt`` lists (a change measured and reverted) ranks below every other: its answers stand only
for questions no other run asked, and the count of those is printed. A run is one strategy
label (``no_rl`` is HYDRA's default mode, ``vipergpt``, ``hammr``, ...), the folder name ``summarize_run.py``
records; only summaries of the user dataset count.

Prints, per label and split: VQA accuracy over the questions answered and how many of the split's
questions that is, Acc@0.5 likewise, and how many summaries the standing answers come from. Standard
library and git only (no venv needed).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass
class Standing:
    """One label's standing answers on one split: question id -> score (0..1; Acc@0.5 hit for a box)."""

    label: str
    split: str
    vqa: dict[str, float] = field(default_factory=dict)
    boxes: dict[str, float] = field(default_factory=dict)
    categories: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    sources: set[str] = field(default_factory=set)
    from_reverted: int = 0  # questions whose only answers came from reverted code
    size: dict[str, int] = field(default_factory=dict)  # the split's questions: "vqa" and "box" counts


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def reverted_commits(path: Path) -> set[str]:
    """The commits (7 hex digits) ``path`` (``reverted.txt``) lists as reverted."""
    if not path.exists():
        return set()
    lines = [line.split()[0] for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return {c[:7] for first in lines for c in first.split(",")}


def run_order(summaries: Path, commits: dict[str, str], rev: str = "HEAD",
              reverted: set[str] = frozenset()) -> dict[str, tuple[int, int, str]]:
    """Sort key of each summary file named in ``commits`` (file name -> the commit its run recorded): (that
    commit's place in ``rev``'s history, else that of the
    commit that added the file, -1 for a run of a ``reverted`` commit; the adding commit's place; the name).
    Outside a git checkout (a copied folder) there is no history to read: the names alone order the runs."""
    try:
        repo = Path(_git(summaries, "rev-parse", "--show-toplevel").strip())
    except (OSError, subprocess.CalledProcessError):
        print(f"standing: {summaries} is not in a git checkout; runs ordered by file name", file=sys.stderr)
        return {name: (0, 0, name) for name in commits}
    history = _git(repo, "rev-list", "--reverse", rev).split()
    place = {sha[:7]: i for i, sha in enumerate(history)}
    added: dict[str, int] = {}
    log = _git(repo, "log", "--reverse", "--diff-filter=AR", "--name-only", "--format=@%H", rev, "--",
               str(summaries.resolve().relative_to(repo)))
    current = -1
    for line in log.splitlines():
        if line.startswith("@"):
            current = place.get(line[1:8], -1)
        elif line.strip():
            added.setdefault(Path(line).name, current)
    order = {}
    for name, commit in commits.items():
        when_added = added.get(name, len(history))  # a summary not yet committed is the newest of all
        order[name] = (-1 if commit[:7] in reverted else place.get(commit[:7], when_added), when_added, name)
    return order


def standings(questions: Path, summaries: Path, labels: list[str], rev: str = "HEAD",
              reverted: Path | None = None) -> list[Standing]:
    """The standing answers of each label on dev and test (questions of ``questions``, runs of ``summaries``,
    reverted commits listed in ``reverted``, by default ``reverted.txt`` beside ``summaries``)."""
    rows = {r["id"]: r for r in (json.loads(line) for line in questions.read_text().splitlines() if line.strip())}
    runs = {path.name: json.loads(path.read_text()) for path in summaries.glob("*.json")}
    order = run_order(summaries, {name: str(run.get("commit") or "") for name, run in runs.items()}, rev,
                      reverted_commits(reverted or summaries.parent / "reverted.txt"))
    newest: dict[str, dict[str, tuple[float, str, bool]]] = {label: {} for label in labels}
    for name in sorted(order, key=order.__getitem__):
        summary = runs[name]
        if summary.get("label") not in newest or summary.get("dataset") not in (None, "user"):
            continue
        for q in summary.get("questions", []):
            if q.get("id") in rows:
                newest[summary["label"]][q["id"]] = (float(q.get("score") or 0.0), name, order[name][0] < 0)
    out = []
    for label in labels:
        for split in ("dev", "test"):
            st = Standing(label, split, size={t: sum(1 for r in rows.values() if r.get("split") == split
                                                    and ("box" in r) == (t == "box")) for t in ("vqa", "box")})
            for qid, (score, name, stale) in newest[label].items():
                row = rows[qid]
                if row.get("split") != split:
                    continue
                (st.boxes if "box" in row else st.vqa)[qid] = score
                st.categories["grounding" if "box" in row else str(row.get("category", "other"))].append(score)
                st.sources.add(name)
                st.from_reverted += stale
            out.append(st)
    return out


def _pct(scores: dict[str, float] | list[float]) -> str:
    values = list(scores.values()) if isinstance(scores, dict) else scores
    return f"{100 * sum(values) / len(values):.2f}" if values else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=Path, default=HERE / "questions.jsonl")
    parser.add_argument("--summaries", type=Path, default=HERE / "summaries")
    parser.add_argument("--label", action="append", default=[], help="a strategy label (default: no_rl and vipergpt)")
    parser.add_argument("--rev", default="HEAD", help="the history that orders the runs")
    parser.add_argument("--categories", action="store_true", help="also the score per category")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = parser.parse_args()
    found = standings(args.questions, args.summaries, args.label or ["no_rl", "vipergpt"], args.rev)
    if args.markdown:
        print("| label | split | VQA | questions | Acc@0.5 | boxes |\n|---|---|---|---|---|---|")
    for st in found:
        vqa, box = f"{len(st.vqa)}/{st.size['vqa']}", f"{len(st.boxes)}/{st.size['box']}"
        if args.markdown:
            print(f"| {st.label} | {st.split} | {_pct(st.vqa)} | {vqa} | {_pct(st.boxes)} | {box} |")
        else:
            print(f"{st.label:10} {st.split:5} VQA {_pct(st.vqa):>6} ({vqa})  Acc@0.5 {_pct(st.boxes):>6} ({box})  "
                  f"from {len(st.sources)} summaries, {st.from_reverted} answers of reverted code")
        if args.categories:
            print("   " + ", ".join(f"{c} {_pct(v)} ({len(v)})" for c, v in sorted(st.categories.items())))


if __name__ == "__main__":
    main()
