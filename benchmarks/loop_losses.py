"""Where HYDRA's loop loses, read from recorded episodes (``hydra-vr record --explore all``); no LLM or tool call.

With every option of every executed step run on a side sandbox, an episode says what each choice would
have given. Each episode the loop got wrong falls in the first class that fits:

- ``passed_over``: at some step an option the controller did not pick ended the episode right;
- ``continued_past``: a step's own program gave the right answer, but the summarizer said "continue" (or
  answered otherwise) and the episode ended wrong;
- ``never_right``: no option at any executed step gave the right answer (tools, reasoner or planner).

It also prints the oracle accuracy (a controller that always picks an option that ends right, where one
was recorded), how often a step's options all gave the same outcome (with nothing to choose between, no
controller can gain there), and what the whole-question option (``agent.hydra.whole_query``) gave where it
was offered: how often it ended the episode, right, and how often another option of that step ended right
where it ended wrong (all a controller could gain over always picking it).

    python benchmarks/loop_losses.py /path/to/episodes.jsonl [--json out.json] [--show 5]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

CLASSES = ("passed_over", "continued_past", "never_right")


def _scorer(episode: dict[str, Any]) -> Callable[[str | None, list | None], bool]:
    """Whether an output is right for the episode's sample, by the metric the recorder used
    (:func:`hydra_vr.training.reward.reward_metric`, counted as :func:`is_correct`)."""
    from hydra_vr.eval.sample_eval import sample_from_record
    from hydra_vr.training.reward import is_correct, reward_metric

    sample = sample_from_record({**episode, "gt": episode.get("gt") or {}})  # an episode has a record's sample fields
    dataset = str(episode.get("dataset") or "")
    return lambda answer, boxes: is_correct(sample.task, reward_metric(sample, dataset, answer, boxes or [])) >= 0.5


def classify(episode: dict[str, Any]) -> dict[str, Any]:
    """One episode's verdict: right, its loss class when wrong, the oracle, and per step whether its options differ."""
    gt = episode.get("gt") or {}
    result = episode.get("result") or {}
    right_for = _scorer(episode)
    loop_right = right_for(result.get("answer"), result.get("boxes"))
    steps = episode.get("steps") or []
    any_final_right = False
    passed_over = continued_past = False
    same_outcomes: list[bool] = []
    whole: dict[str, bool] | None = None
    for st in steps:
        rounds = st.get("rounds") or []
        choice = rounds[-1].get("choice", -1) if rounds else -1
        outcomes = [o for o in st.get("outcomes") or [] if o.get("recorded")]
        seen = {(o.get("decision"), str(o.get("answer")).strip().lower()) for o in outcomes}
        same_outcomes.append(len(seen) <= 1)
        for i, o in enumerate(st.get("outcomes") or []):
            if not o.get("recorded"):
                continue
            right = right_for(o.get("answer"), o.get("boxes"))
            if o.get("final") and right:
                any_final_right = True
                if i != choice:
                    passed_over = True
            if i == choice and right and not o.get("final"):
                continued_past = True
        if whole is None:
            whole = _whole_option(st, right_for)
    verdict = "right" if loop_right else (
        "passed_over" if passed_over else "continued_past" if continued_past else "never_right")
    return {"id": episode.get("id"), "query": episode.get("query"), "answer": result.get("answer"),
            "gt": gt.get("answer"), "verdict": verdict, "oracle_right": loop_right or any_final_right,
            "steps": len(steps), "steps_without_choice": sum(same_outcomes), "executed_steps": len(same_outcomes),
            "whole": whole}


def _whole_option(step: dict[str, Any], right_for: Callable[[str | None, list | None], bool]) -> dict[str, bool] | None:
    """What the whole-question option of ``step`` gave (None when the step did not offer it): whether it ended
    the episode, right, and whether another option ended right where it did not."""
    from hydra_vr.agent.strategies.hydra import is_whole_query

    rounds = step.get("rounds") or []
    options = rounds[-1].get("options") or [] if rounds else []
    outcomes = step.get("outcomes") or []
    at = next((i for i, o in enumerate(options) if is_whole_query(str(o.get("instruction", "")))), None)
    if at is None or at >= len(outcomes) or not outcomes[at].get("recorded"):
        return None
    mine = outcomes[at]
    right = bool(mine.get("final")) and right_for(mine.get("answer"), mine.get("boxes"))
    others = any(o.get("recorded") and o.get("final") and right_for(o.get("answer"), o.get("boxes"))
                 for i, o in enumerate(outcomes) if i != at)
    return {"ended": bool(mine.get("final")), "right": right, "another_right": others and not right}


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    counts = collections.Counter(r["verdict"] for r in rows)
    steps = sum(r["executed_steps"] for r in rows)
    whole = [r["whole"] for r in rows if r.get("whole") is not None]
    return {
        "episodes": n,
        "loop_accuracy": round(100 * counts["right"] / n, 1) if n else None,
        "oracle_accuracy": round(100 * sum(r["oracle_right"] for r in rows) / n, 1) if n else None,
        "losses": {c: counts[c] for c in CLASSES},
        "mean_steps": round(steps / n, 2) if n else None,
        "steps_whose_options_all_agree": f"{sum(r['steps_without_choice'] for r in rows)}/{steps}",
        "whole_question_option": {"offered": len(whole), "ended": sum(w["ended"] for w in whole),
                                  "right": sum(w["right"] for w in whole),
                                  "another_option_right_where_it_was_not": sum(w["another_right"] for w in whole)},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("episodes", type=Path, nargs="+", help="episode JSONL files written by hydra-vr record")
    ap.add_argument("--json", type=Path, help="write the summary and per-episode verdicts here")
    ap.add_argument("--show", type=int, default=0, help="print this many episodes of each loss class")
    args = ap.parse_args(argv)
    rows = []
    for path in args.episodes:
        if not path.is_file():
            print(f"no episode file at {path}", file=sys.stderr)
            return 2
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                try:
                    rows.append(classify(json.loads(line)))
                except json.JSONDecodeError:
                    continue  # a cut-off last line of a run still being written
    if not rows:
        print("no episodes", file=sys.stderr)
        return 2
    summary = summarize(rows)
    print(json.dumps(summary, indent=1))
    for cls in CLASSES if args.show else ():
        for r in [r for r in rows if r["verdict"] == cls][: args.show]:
            print(f"{cls:15s} {r['query']!r}: loop {r['answer']!r}, truth {r['gt']!r}")
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "episodes": rows}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
