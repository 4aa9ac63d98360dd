"""Each answer check on its own, replayed on finished eval runs; no LLM or tool call.

For every sample of the runs whose trace stores its tool calls (``hydra-vr eval`` writes them since the
checks became replayable), each declared check (``hydra_vr.agent.checks.ANSWER_CHECKS``) is run on the final
answer, with the question's frame and every call of the episode as evidence. A check that fires on an answer
that was right would have cost accuracy there; on one that was wrong it might have helped (what replaces a
refused answer is not known offline). Use it to size a new check, or one switched off with
``--set answers.disable=[...]``, before spending an eval on it.

    python benchmarks/replay_checks.py RUN_DIR [RUN_DIR ...] [--json out.json]
    python benchmarks/replay_checks.py RUN_DIR --without presence_unsearched

``--without CHECK`` is the other direction: a run made WITH the check, scored as if the check were off. The
loop is deterministic up to the first firing (temperature-0 planner and reasoner), so without the check the
episode would have ended on the answer the check refused first; that answer is scored instead of the final one.

Only aggregate figures are printed (``--show`` lists the firings: use it on dev runs only).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path
from typing import Any


def _episode_evidence(trace: dict[str, Any]) -> tuple[list[Any], str] | None:
    """(every tool call of the episode, the last program's code); None when the trace stores no calls."""
    from hydra_vr.api.types import ToolCallRecord

    calls, code, stored = [], "", False
    for step in trace.get("steps") or []:
        result = step.get("result") or {}
        if "calls" in result:
            stored = True
            calls.extend(ToolCallRecord.from_dict(c) for c in result["calls"])
        code = step.get("code") or code
    return (calls, code) if stored else None


def replay_run(run_dir: Path) -> tuple[list[dict[str, Any]], int]:
    """One row per (sample, check that applies): whether it fired and whether the answer was right; and how many
    samples had no stored calls (older runs)."""
    from hydra_vr.agent.checks import ANSWER_CHECKS, Evidence
    from hydra_vr.question.frame import parse

    rows: list[dict[str, Any]] = []
    unstored = 0
    results = run_dir / "results.jsonl"
    if not results.is_file():
        raise FileNotFoundError(f"{run_dir} has no results.jsonl: not a hydra-vr eval run folder")
    for line in results.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a cut-off last line
        trace_path = run_dir / str(record.get("trace") or "")
        if not record.get("trace") or not trace_path.is_file():
            unstored += 1
            continue
        evidence = _episode_evidence(json.loads(trace_path.read_text(encoding="utf-8")))
        if evidence is None:
            unstored += 1
            continue
        calls, code = evidence
        task = record.get("task", "vqa")
        if task == "vqa":
            answer = record.get("prediction")
            if answer in (None, ""):
                continue
            frame, kind, answer = parse(record["query"], (record.get("gt") or {}).get("choices")), None, str(answer)
            kind = frame.kind
        else:
            boxes = record.get("boxes") or []
            if not boxes:
                continue
            frame, kind, answer = None, "box", str([float(v) for v in boxes[0]])
        right = float(record.get("score") or 0.0) >= 0.5
        for check in ANSWER_CHECKS:
            if not check.applies(kind):
                continue
            fired = check.test(Evidence(calls, code), frame, answer)
            rows.append({"run": str(run_dir), "id": record.get("id"), "query": record.get("query"), "answer": answer,
                         "check": check.name, "fired": bool(fired), "reason": fired or "", "right": right})
    return rows, unstored


def without_check(run_dir: Path, check: str) -> dict[str, Any]:
    """The run's VQA accuracy as made, and as it would have been without ``check``: each episode where it fired
    scored on the answer it refused first (see the module docstring)."""
    from hydra_vr.eval.sample_eval import sample_from_record
    from hydra_vr.eval.scoring import score_sample

    n = fired = 0
    with_sum = without_sum = 0.0
    for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("task") != "vqa":
            continue
        n += 1
        score = float(record.get("score") or 0.0)
        with_sum += score
        trace_path = run_dir / str(record.get("trace") or "")
        firings = json.loads(trace_path.read_text(encoding="utf-8")).get("checks", []) if record.get("trace") and trace_path.is_file() else []
        refused = next((f["answer"] for f in firings if f.get("check") == check), None)
        if refused is None:
            without_sum += score
            continue
        fired += 1
        sample = sample_from_record({**record, "gt": record.get("gt") or {}})
        without_sum += float(score_sample(sample, refused, [], str(record.get("dataset") or "")).score or 0.0)
    pct = (lambda v: round(100 * v / n, 1) if n else None)
    return {"run": str(run_dir), "vqa": n, "fired": fired, "with": pct(with_sum), "without": pct(without_sum)}


def table(rows: list[dict[str, Any]]) -> str:
    per: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in rows:
        c = per[r["check"]]
        c["applies"] += 1
        c["fired"] += r["fired"]
        c["fired_right"] += r["fired"] and r["right"]
        c["fired_wrong"] += r["fired"] and not r["right"]
    lines = ["| check | answers it applies to | fired | on right answers | on wrong answers |", "|---|---:|---:|---:|---:|"]
    for name, c in sorted(per.items()):
        lines.append(f"| {name} | {c['applies']} | {c['fired']} | {c['fired_right']} | {c['fired_wrong']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", type=Path, nargs="+", help="run folders written by hydra-vr eval --out")
    ap.add_argument("--json", type=Path, help="write every row here")
    ap.add_argument("--show", action="store_true", help="list each firing (dev runs only: never read test answers)")
    ap.add_argument("--without", metavar="CHECK", help="score runs made with CHECK as if it were off")
    args = ap.parse_args(argv)
    if args.without:
        for run in args.runs:
            if not (run / "results.jsonl").is_file():
                print(f"{run} has no results.jsonl: not a hydra-vr eval run folder", file=sys.stderr)
                return 2
            got = without_check(run, args.without)
            print(f"{got['run']}: {got['vqa']} VQA samples, {args.without} fired on {got['fired']}: "
                  f"accuracy {got['with']} with it, {got['without']} without it")
        return 0
    rows: list[dict[str, Any]] = []
    unstored = 0
    for run in args.runs:
        try:
            got, missing = replay_run(run)
        except FileNotFoundError as exc:
            print(exc, file=sys.stderr)
            return 2
        rows += got
        unstored += missing
    if not rows:
        print(f"nothing to replay: {unstored} samples have traces without stored tool calls (runs made before "
              "the traces kept them)", file=sys.stderr)
        return 2
    print(table(rows))
    if unstored:
        print(f"\n({unstored} samples skipped: their traces store no tool calls)")
    if args.show:
        for r in rows:
            if r["fired"]:
                print(f"{r['check']}: {r['query']!r} -> {r['answer']!r} ({'right' if r['right'] else 'wrong'}): {r['reason'][:160]}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
