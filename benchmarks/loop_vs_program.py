"""Where one program beats HYDRA's loop, read from two eval runs of the same questions; no LLM or tool call.

    python benchmarks/loop_vs_program.py RUNS/vipergpt RUNS/hydra [--json out.json] [--show]

The first run is the one-program baseline (``--strategy vipergpt``), the second the loop (``--strategy hydra``,
any mode); both need their traces (``hydra-vr eval`` writes them). On the VQA questions both finished, each
question the program got right and the loop got wrong falls in the first class that fits:

- ``step_right_lost``: a loop step's own program gave the right answer, but the episode ended on another (the
  summarizer re-derived it, a later step overwrote it, or the final answer merged it away);
- ``fallback_answered``: the program's own code gave no answer and its fallback (``simple_query`` of the whole
  question on the whole image) did; the loop's later steps answered otherwise (a loop whose whole-question step
  runs that fallback too, as it does since 2026-11-28, parts from the program here only where a check refused it);
- ``operation_unreached``: the program called a tool operation (``is_blurry``, ``verify_property``, ...) that no
  step of the loop called: the loop's instructions split the question where the measure was never asked for;
- ``no_step_answer``: no step produced an answer and the loop fell back (step limit, fallback query);
- ``other_answer``: the loop reached the same operations and answered otherwise (other arguments, other objects).

Where the two part: with ``agent.hydra.whole_query`` at 0.5 mode no_rl's first step writes the program's own first
program (a controller may ask the planner first instead), so there the runs can differ only where that program gave
no answer of its own; ``divergence`` counts, of the common questions,
those whose first programs are the same, those where that program failed, and who was right there.

It also counts the questions the loop alone got right, and prints the cost of both runs on the common questions
(LLM calls, steps, median seconds and the loop's median over the program's: HYDRA's cost goal is at most 2x).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

CLASSES = ("step_right_lost", "fallback_answered", "operation_unreached", "no_step_answer", "other_answer")
RIGHT = 0.5  # a score at or above it counts as right (VQA accuracy gives partial credit)


def _records(run: Path) -> dict[str, dict[str, Any]]:
    """The run's VQA records by id, re-scored with the current scorer, each with its trace loaded (or ``{}``)."""
    from hydra_vr.eval.rescore import rescore_records, run_dataset
    from hydra_vr.eval.store import ResultsFile

    dataset = run_dataset(run)
    out = {}
    for record in rescore_records(ResultsFile(run / "results.jsonl").load().records, dataset).records:
        if record.get("task", "vqa") != "vqa":
            continue
        trace_path = run / str(record.get("trace") or f"traces/{record['id']}.json")
        record["_trace"] = json.loads(trace_path.read_text()) if trace_path.is_file() else {}
        record["_dataset"] = str(record.get("dataset") or dataset or "")
        out[record["id"]] = record
    return out


def _right(record: dict[str, Any], answer: Any = ...) -> bool:
    """Whether the record's prediction (or ``answer`` scored in its place) is right."""
    if answer is ...:
        return float(record.get("score") or 0.0) >= RIGHT
    from hydra_vr.eval.sample_eval import score_fields

    scored = score_fields({**record, "prediction": "" if answer is None else str(answer)}, record["_dataset"])
    return float(scored.get("score") or 0.0) >= RIGHT


def _operations(trace: dict[str, Any]) -> set[str]:
    """The tool operations every step's program called."""
    return {str(call.get("tool")) for step in trace.get("steps") or [] for call in (step.get("result") or {}).get("calls") or []
            if call.get("tool")}


def _first_step(trace: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The trace's first step and its attempts ({} and [] without steps)."""
    steps = trace.get("steps") or [{}]
    return steps[0], steps[0].get("attempts") or []


def _first_code(trace: dict[str, Any]) -> str | None:
    """The code of the first attempt of the trace's first step, or None."""
    attempts = _first_step(trace)[1]
    return attempts[0].get("code") if attempts else None


def _from_fallback(trace: dict[str, Any]) -> bool:
    """Whether a trace's first step answered with its fallback program, its own code having given none."""
    step, attempts = _first_step(trace)
    return bool(attempts) and bool(attempts[-1].get("fallback")) and step.get("guess") not in (None, "")


def _own_code_failed(trace: dict[str, Any]) -> bool:
    """Whether a trace's first step's own code gave no answer: none at all, or its fallback program's (a loop whose
    whole-question step runs one, as one program does)."""
    step, attempts = _first_step(trace)
    return step.get("guess") in (None, "") or bool(attempts and attempts[-1].get("fallback"))


def divergence(programs: dict[str, dict[str, Any]], loops: dict[str, dict[str, Any]], common: list[str]) -> dict[str, int]:
    """Where the runs part: questions whose loop wrote the program's first program at its first step ("same first
    program"), and of those the ones where that program gave no answer of its own, with who was right there."""
    same = [i for i in common if (code := _first_code(programs[i]["_trace"])) is not None
            and code == _first_code(loops[i]["_trace"])]
    failed = [i for i in same if _own_code_failed(loops[i]["_trace"])]
    return {"same_first_program": len(same), "first_program_failed": len(failed),
            "program_right_there": sum(_right(programs[i]) for i in failed),
            "loop_right_there": sum(_right(loops[i]) for i in failed),
            "program_fallback_answered_there": sum(_from_fallback(programs[i]["_trace"]) for i in failed)}


def classify(program: dict[str, Any], loop: dict[str, Any]) -> dict[str, Any]:
    """One question the program got right and the loop wrong: its class and what decided it."""
    trace = loop["_trace"]
    steps = trace.get("steps") or []
    source = str(trace.get("answer_source") or "")
    right_steps = [s.get("step") for s in steps if s.get("guess") not in (None, "") and _right(loop, s.get("guess"))]
    unreached = sorted(_operations(program["_trace"]) - _operations(trace))
    if right_steps:
        kind = "step_right_lost"
    elif _from_fallback(program["_trace"]):
        kind = "fallback_answered"
    elif unreached:
        kind = "operation_unreached"
    elif not any(s.get("guess") not in (None, "") for s in steps) or source.startswith("fallback"):
        kind = "no_step_answer"
    else:
        kind = "other_answer"
    return {"id": loop["id"], "class": kind, "query": loop.get("query"), "loop": loop.get("prediction"),
            "program": program.get("prediction"), "answer_source": source, "right_steps": right_steps,
            "unreached": unreached, "steps": len(steps)}


def _cost(records: list[dict[str, Any]]) -> dict[str, float]:
    seconds = [float(r.get("wall_seconds") or r.get("seconds") or 0.0) for r in records]
    return {"n": len(records),
            "accuracy": 100 * statistics.mean(float(r.get("score") or 0.0) for r in records),
            "llm_calls": statistics.mean(float((r.get("llm") or {}).get("calls") or 0) for r in records),
            "steps": statistics.mean(float(r.get("steps") or 0) for r in records),
            "median_s": statistics.median(seconds)}


def compare(program_run: Path, loop_run: Path, only: set[str] | None = None) -> dict[str, Any]:
    """The classification and the cost of both runs on the VQA questions both finished (of ``only``, if given)."""
    programs, loops = _records(program_run), _records(loop_run)
    common = [i for i in programs if i in loops and (only is None or i in only)]
    if not common:
        raise SystemExit(f"{program_run} and {loop_run} share no finished VQA question")
    losses = [classify(programs[i], loops[i]) for i in common if _right(programs[i]) and not _right(loops[i])]
    gains = [i for i in common if _right(loops[i]) and not _right(programs[i])]
    cost = {"program": _cost([programs[i] for i in common]), "loop": _cost([loops[i] for i in common])}
    ratio = cost["loop"]["median_s"] / cost["program"]["median_s"] if cost["program"]["median_s"] else None
    return {"common": len(common), "program_only": len(losses), "loop_only": len(gains),
            "classes": {c: sum(x["class"] == c for x in losses) for c in CLASSES},
            "answer_sources": dict(Counter(x["answer_source"] for x in losses)),
            "divergence": divergence(programs, loops, common),
            "cost": cost, "median_ratio": ratio, "losses": losses}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("program", type=Path, help="the one-program run folder (--strategy vipergpt)")
    parser.add_argument("loop", type=Path, help="the loop's run folder (--strategy hydra)")
    parser.add_argument("--json", type=Path, help="write the classification here")
    parser.add_argument("--same-as", type=Path, metavar="RUN",
                        help="only the questions this run folder finished (a before/after on the same questions)")
    parser.add_argument("--show", action="store_true", help="print each lost question's class (dev runs only: never on test)")
    args = parser.parse_args(argv)
    for run in (args.program, args.loop):
        if not (run / "results.jsonl").is_file():
            print(f"{run}: not a run folder (no results.jsonl)", file=sys.stderr)
            return 2
    if args.same_as:
        from hydra_vr.eval.store import ResultsFile

        only: set[str] | None = ResultsFile(args.same_as / "results.jsonl").load().ids
    else:
        only = None
    out = compare(args.program, args.loop, only)
    print(f"{out['common']} VQA questions in both runs: the program alone right on {out['program_only']}, "
          f"the loop alone on {out['loop_only']}")
    for name, n in out["classes"].items():
        print(f"  {name:<20} {n}")
    print("  the lost answers came from: " + ", ".join(f"{k or '-'} {v}" for k, v in sorted(out["answer_sources"].items())))
    d = out["divergence"]
    print(f"same first program {d['same_first_program']}; it gave no answer on {d['first_program_failed']} "
          f"(the program's fallback answered {d['program_fallback_answered_there']}): there the program was right on "
          f"{d['program_right_there']}, the loop on {d['loop_right_there']}")
    for name, c in out["cost"].items():
        print(f"{name:<8} accuracy {c['accuracy']:.1f}  LLM calls {c['llm_calls']:.2f}  steps {c['steps']:.2f}  "
              f"median {c['median_s']:.1f} s")
    if out["median_ratio"] is not None:
        print(f"the loop's median is {out['median_ratio']:.2f}x the program's (goal: at most 2x)")
    if args.show:
        for x in out["losses"]:
            print(f"  {x['class']:<20} {x['id']:<24} loop {x['loop']!r} ({x['answer_source']}), program {x['program']!r}, "
                  f"right at steps {x['right_steps']}, unreached {x['unreached']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
