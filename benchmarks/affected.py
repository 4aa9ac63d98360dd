"""Before/after of a change on the questions it can reach, without rerunning the rest.

With the LLM reply cache off and llama.cpp's fixed seed, a run is deterministic: a question whose calls a change
does not reach gets the same prediction again. So a change to one tool path is measured by rerunning only the
questions whose stored traces call it, and putting their new rows in place of the old ones:

    python benchmarks/affected.py ids RUN [RUN ...] --tool simple_query --kind color > IDS
    python benchmarks/real_photos/rounds.py --out NEW --split dev --ids IDS --seed 7 ...
    python benchmarks/affected.py merge RUN NEW/vipergpt

``ids`` prints the ids (one per line) of the samples whose traces hold a call of ``--tool``; with ``--kind``, only
calls whose own question (else the sample's query) has that answer type in its question frame. ``--several-patches``
instead keeps the samples where a step's program set ``final_answer`` to several patches (what a change to how a
grounding answer of many patches is read reaches); ``--unfound`` the grounding samples whose whole-question first
step found no box, its fallback included (what HYDRA's ``stop_unfound`` reaches). Calls of a failed
attempt that the trace does not keep are not seen: pass every run the change is measured on, so their union
covers what any of them called. ``merge`` prints the accuracy of RUN before and with the rerun rows, and how many
predictions changed. A rerun question that reached no changed path should keep its prediction: the unchanged
ones among the rerun are the check that the runs were deterministic.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def _rows(run: Path) -> list[dict[str, Any]]:
    """The run's records, read as the eval reads them (a line cut short by a killed run is left out)."""
    from hydra_vr.eval.store import ResultsFile

    path = run / "results.jsonl"
    if not path.is_file():
        raise SystemExit(f"{run}: no results.jsonl (not a run folder)")
    return ResultsFile(path).load().records


def _calls(node: Any) -> Iterator[dict[str, Any]]:
    """Every recorded tool call in a trace, wherever it is kept (steps, workers, sub-agents)."""
    if isinstance(node, dict):
        if isinstance(node.get("tool"), str) and isinstance(node.get("args"), dict):
            yield node
        for value in node.values():
            yield from _calls(value)
    elif isinstance(node, list):
        for value in node:
            yield from _calls(value)


def _traces(run: Path) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(record, its trace) for each of ``run``'s samples whose trace file is there."""
    for row in _rows(run):
        if row.get("trace") and (run / row["trace"]).is_file():
            yield row, json.loads((run / row["trace"]).read_text())


def reached(run: Path, tool: str, kind: str | None = None) -> list[str]:
    """Ids of ``run``'s samples whose traces call ``tool`` (with a question of answer type ``kind``, if given)."""
    from hydra_vr.question import parse

    def kind_of(text: str) -> str | None:
        return parse(text).answer.kind if text.strip() else None

    ids = []
    for row, trace in _traces(run):
        for call in _calls(trace):
            if call["tool"] != tool:
                continue
            asked = call["args"].get("question")
            if kind is None or kind_of(str(asked if asked is not None else row.get("query") or "")) == kind:
                ids.append(row["id"])
                break
    return ids


def several_patches(run: Path) -> list[str]:
    """Ids of ``run``'s samples where a step's program set ``final_answer`` to more than one patch."""
    ids = []
    for row, trace in _traces(run):
        answers = [(step.get("result") or {}).get("final_answer") for step in trace.get("steps") or []]
        if any(isinstance(a, list) and sum(isinstance(p, dict) and "box" in p for p in a) > 1 for a in answers):
            ids.append(row["id"])
    return ids


def unfound(run: Path) -> list[str]:
    """Ids of ``run``'s grounding samples whose first step, the whole question, ended with no box after its fallback
    ran (what HYDRA's ``stop_unfound`` reaches)."""
    from hydra_vr.agent.strategies.hydra import is_whole_query

    ids = []
    for row, trace in _traces(run):
        steps = trace.get("steps") or []
        first = steps[0] if steps else {}
        attempts = first.get("attempts") or []
        if (trace.get("task") == "grounding" and is_whole_query(str(first.get("action") or "")) and not first.get("boxes")
                and attempts and attempts[-1].get("fallback")):
            ids.append(row["id"])
    return ids


def _answer(row: dict[str, Any]) -> Any:
    """What a sample answered: its prediction, or its boxes for grounding."""
    return row.get("prediction") if row.get("prediction") is not None else row.get("boxes")


def merge(before: Path, rerun: Path) -> dict[str, Any]:
    """Accuracy of ``before`` and of ``before`` with ``rerun``'s rows in place of its own (ids in both)."""
    old = {r["id"]: r for r in _rows(before)}
    new = {r["id"]: r for r in _rows(rerun) if r["id"] in old}
    if not old:
        raise SystemExit(f"{before}: no samples")
    after = {**old, **new}
    score = lambda rows: 100.0 * sum(float(r.get("score") or 0.0) for r in rows) / len(old)  # noqa: E731
    return {"n": len(old), "before": score(old.values()), "after": score(after.values()), "rerun": len(new),
            "changed": sum(_answer(new[i]) != _answer(old[i]) for i in new),
            "gained": sum(float(new[i].get("score") or 0) > float(old[i].get("score") or 0) for i in new),
            "lost": sum(float(new[i].get("score") or 0) < float(old[i].get("score") or 0) for i in new)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_ids = sub.add_parser("ids", help="ids of the samples whose traces call a tool")
    p_ids.add_argument("runs", nargs="+", type=Path)
    p_ids.add_argument("--tool", help="a recorded tool name: find, simple_query, verify_property, ...")
    p_ids.add_argument("--several-patches", action="store_true",
                       help="instead: samples whose program set final_answer to several patches")
    p_ids.add_argument("--unfound", action="store_true",
                       help="instead: grounding samples whose whole-question first step and its fallback found no box")
    p_ids.add_argument("--kind", help="only calls whose question has this answer type (yesno, choice, number, color, open)")
    p_merge = sub.add_parser("merge", help="accuracy before and with a rerun subset's rows")
    p_merge.add_argument("before", type=Path)
    p_merge.add_argument("rerun", type=Path)
    args = parser.parse_args(argv)
    if args.command == "ids":
        if sum((bool(args.tool), args.several_patches, args.unfound)) != 1:
            parser.error("ids needs one of --tool, --several-patches and --unfound")
        pick = (several_patches if args.several_patches else unfound if args.unfound
                else (lambda run: reached(run, args.tool, args.kind)))
        ids = sorted({i for run in args.runs for i in pick(run)})
        print("\n".join(ids))
    else:
        m = merge(args.before, args.rerun)
        print(f"{args.before}: n={m['n']} before {m['before']:.2f} after {m['after']:.2f}; rerun {m['rerun']}: "
              f"{m['changed']} answers changed, +{m['gained']} -{m['lost']}")


if __name__ == "__main__":
    main()
