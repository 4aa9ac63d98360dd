"""The run report, built from result records alone: ``report.json`` and ``report.md``.

Scores are percentages (x100). Every report has the same summary row (dataset, mode, n, errors,
main metric, steps, seconds, tokens) so that ablation runs line up. Each task is scored over its
own rows: VQA metrics over VQA rows, grounding Acc@0.5 / mean IoU (failures count as IoU 0) over
grounding rows, so a user file that mixes both reports each with its own metric. The breakdowns
follow the benchmark: GQA structural / semantic types and binary vs open (official
``gqa_breakdown``), A-OKVQA direct answer (difficult questions skipped, as prescribed) and
multiple choice, OK-VQA question / answer types, and a ``category`` column wherever rows carry one.
The answer-type fit (:mod:`hydra_vr.answer_types`) is computed here, from the stored question,
choices and prediction, so runs made before it existed get it too.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hydra_vr.answer_types import expected_type
from hydra_vr.eval.metrics import gqa_breakdown, gqa_exact_match, gqa_normalized_match, summarize_grounding
from hydra_vr.eval.predictions import write_prediction_files
from hydra_vr.eval.scoring import GROUNDING_METRIC, metric_family
from hydra_vr.eval.store import RESULTS, ResultsFile, read_run_file

REPORT_JSON = "report.json"
REPORT_MD = "report.md"
Record = dict[str, Any]
_MISFIT_EXAMPLES = 5


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100.0 * value, 2)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _metric_means(records: Sequence[Record]) -> dict[str, dict[str, Any]]:
    """Every per-sample score name -> {score (x100), n}; A-OKVQA DA skips difficult questions."""
    values: dict[str, list[float]] = {}
    for r in records:
        difficult = bool(r.get("meta", {}).get("difficult_direct_answer"))
        for name, value in (r.get("scores") or {}).items():
            if name == "direct_answer" and difficult:
                continue
            values.setdefault(name, []).append(float(value))
    return {name: {"score": _pct(_mean(v)), "n": len(v)} for name, v in values.items()}


def _groups(records: Sequence[Record], key: Callable[[Record], str | None]) -> dict[str, dict[str, Any]]:
    by: dict[str, list[float]] = {}
    for r in records:
        group = key(r)
        if group is not None and r.get("score") is not None:
            by.setdefault(group, []).append(float(r["score"]))
    return {g: {"score": _pct(_mean(v)), "n": len(v)} for g, v in sorted(by.items())}


def _gqa_sections(records: Sequence[Record]) -> dict[str, Any]:
    items = [(r.get("prediction") or "", r["gt"]["answer"], r.get("meta", {}).get("types") or {})
             for r in records if "answer" in r.get("gt", {})]
    if not items:
        return {}
    exact = gqa_breakdown(items, gqa_exact_match)
    norm = gqa_breakdown(items, gqa_normalized_match)
    return {
        "binary_open": {
            "binary": {"score": _pct(exact.binary), "normalized": _pct(norm.binary),
                       "n": sum(1 for *_, t in items if t.get("structural", "unknown") != "query")},
            "open": {"score": _pct(exact.open), "normalized": _pct(norm.open),
                     "n": sum(1 for *_, t in items if t.get("structural") == "query")},
        },
        "structural": {k: {"score": _pct(v), "normalized": _pct(norm.per_structural[k]), "n": exact.counts_structural[k]}
                       for k, v in exact.per_structural.items()},
        "semantic": {k: {"score": _pct(v), "normalized": _pct(norm.per_semantic[k]), "n": exact.counts_semantic[k]}
                     for k, v in exact.per_semantic.items()},
    }


def _vqa_types(records: Sequence[Record]) -> dict[str, Any]:
    return {"question_type": _groups(records, lambda r: r.get("meta", {}).get("question_type")),
            "answer_type": _groups(records, lambda r: r.get("meta", {}).get("answer_type"))}


# metric family (scoring.METRIC_FAMILIES) -> its benchmark's own breakdowns of the VQA rows.
_FAMILY_BREAKDOWNS: dict[str, Callable[[Sequence[Record]], dict[str, Any]]] = {"gqa": _gqa_sections, "vqa": _vqa_types}


def _grounding(records: Sequence[Record]) -> dict[str, Any]:
    """Acc@0.5, mean IoU and failure rate over grounding rows (a VQA row's box is not a target)."""
    pairs = [((r.get("boxes") or [None])[0], r["gt"]["box"]) for r in records
             if r.get("task") == "grounding" and "box" in r.get("gt", {})]
    if not pairs:
        return {}
    s = summarize_grounding(pairs)
    return {GROUNDING_METRIC: _pct(s.accuracy), "miou": _pct(s.mean_iou), "failure_rate": _pct(s.failure_rate), "n": s.count}


def _sample_seconds(record: Record) -> float:
    # wall_seconds covers the whole sample (loop, scoring, trace), also for crashed ones; old records lack it.
    return float(record.get("wall_seconds", record.get("seconds", 0.0)) or 0.0)


def _cost(records: Sequence[Record]) -> dict[str, Any]:
    n = len(records) or 1
    llm: Counter[str] = Counter()
    peaks: dict[str, int] = {}  # the largest prompt of each role over the run (HierVA's context measure)
    for r in records:
        usage = r.get("llm") or {}
        llm.update({k: float(v) for k, v in usage.items() if isinstance(v, (int, float))})
        for role, tokens in (usage.get("peak_prompt_tokens") or {}).items():
            peaks[role] = max(peaks.get(role, 0), int(tokens))
    seconds = [_sample_seconds(r) for r in records]
    return {
        "mean_steps": round(sum(r.get("steps", 0) for r in records) / n, 3),
        "mean_seconds": round(sum(seconds) / n, 3),
        "median_seconds": round(statistics.median(seconds), 3) if seconds else 0.0,
        "total_seconds": round(sum(seconds), 3),
        "llm_calls": int(llm["calls"]),
        "prompt_tokens": int(llm["prompt_tokens"]),
        "completion_tokens": int(llm["completion_tokens"]),
        "calls_per_sample": round(llm["calls"] / n, 3),
        "prompt_tokens_per_sample": round(llm["prompt_tokens"] / n, 1),
        "completion_tokens_per_sample": round(llm["completion_tokens"] / n, 1),
        "mean_tokens": round((llm["prompt_tokens"] + llm["completion_tokens"]) / n, 1),
        "peak_prompt_tokens": peaks or None,
    }


def _answer_fit(records: Sequence[Record]) -> dict[str, Any]:
    """Share of VQA answers whose type does not fit the question (a count question answered "red").

    Over VQA rows whose loop ran (crashed ones have no answer); an empty answer is a misfit.
    """
    by_kind: dict[str, list[int]] = {}  # kind -> [n, misfits]
    examples: list[dict[str, Any]] = []
    for r in records:
        if r.get("crashed"):
            continue
        spec = expected_type(str(r.get("query", "")), (r.get("gt") or {}).get("choices"))
        reason = spec.check(r.get("prediction") or "")
        counts = by_kind.setdefault(spec.kind, [0, 0])
        counts[0] += 1
        if reason is not None:
            counts[1] += 1
            if len(examples) < _MISFIT_EXAMPLES:
                examples.append({"id": r["id"], "expected": spec.kind, "reason": reason})
    if not by_kind:
        return {}
    n, misfit = (sum(c[i] for c in by_kind.values()) for i in (0, 1))
    return {
        "n": n, "misfit": misfit, "share": _pct(misfit / n),
        "by_kind": {k: {"n": c[0], "misfit": c[1], "share": _pct(c[1] / c[0])} for k, c in sorted(by_kind.items())},
        "examples": examples,
    }


def _vqa(records: Sequence[Record], metrics: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The VQA rows' own headline: their main metric (the most common one) and its score."""
    if not records:
        return {}
    main = Counter(r.get("metric") for r in records if r.get("metric")).most_common(1)
    metric = main[0][0] if main else None
    return {"n": len(records), "n_scored": sum(1 for r in records if r.get("score") is not None),
            "metric": metric, "score": metrics.get(metric, {}).get("score") if metric else None}


def _checks(records: Sequence[Record]) -> dict[str, dict[str, Any]]:
    """Per answer check or rewrite (``agent.checks``): in how many rows it refused or rewrote an answer, and the
    mean score of those rows (what the answers it touched ended as)."""
    fired: dict[str, list[float]] = {}
    for r in records:
        for name in r.get("checks") or ():  # a row's own main score, as in the category breakdown
            fired.setdefault(str(name), []).append(float(r.get("score") or 0.0))
    return {name: {"fired": len(scores), "score": _pct(_mean(scores))} for name, scores in sorted(fired.items())}


def _category(record: Record) -> str | None:
    category = (record.get("meta") or {}).get("category")
    return None if category in (None, "") else str(category)


def build_report(records: Sequence[Record], run: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report of ``records`` (one per sample); ``run`` is ``run.json``'s content, if any."""
    settings = (run or {}).get("settings", {})
    dataset = str(records[0].get("dataset")) if records else str(settings.get("dataset", ""))
    vqa_records = [r for r in records if r.get("task", "vqa") != "grounding"]
    metrics = _metric_means(vqa_records)
    vqa = _vqa(vqa_records, metrics)
    grounding = _grounding(records)
    # The headline: VQA's main metric when there are VQA rows, else grounding's Acc@0.5.
    main_metric, score = (vqa["metric"], vqa["score"]) if vqa else (
        (GROUNDING_METRIC, grounding[GROUNDING_METRIC]) if grounding else (None, None))
    family = metric_family(dataset) if dataset else "auto"
    breakdowns: dict[str, Any] = _FAMILY_BREAKDOWNS.get(family, lambda _records: {})(vqa_records)
    if any(_category(r) is not None for r in records):
        # Each row's own main score: its VQA metric, or its Acc@0.5 hit for a grounding row.
        breakdowns["category"] = _groups(records, _category)
    modes = sorted({str(r.get("mode")) for r in records if r.get("mode")})
    return {
        "dataset": dataset,
        "split": next((r["meta"]["split"] for r in records if r.get("meta", {}).get("split")), settings.get("split")),
        "mode": ", ".join(modes) if modes else settings.get("mode"),
        "settings": settings,
        "mixed_settings": bool((run or {}).get("previous")) or len(modes) > 1,
        "n": len(records),
        "n_scored": sum(1 for r in records if r.get("score") is not None),
        "errors": sum(1 for r in records if r.get("error")),
        "crashed": sum(1 for r in records if r.get("crashed")),
        "main_metric": main_metric,
        "score": score,
        "vqa": vqa,
        "metrics": metrics,
        "grounding": grounding,
        "answer_fit": _answer_fit(vqa_records),
        "checks": _checks(records),
        "breakdowns": breakdowns,
        "cost": _cost(records),
    }


# ------------------------------------------------------------------------------------ markdown


def format_cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(format_cell(c) for c in row) + " |" for row in rows]
    return lines + [""]


SUMMARY_HEADER = ("dataset", "split", "mode", "n", "errors", "metric", "score", "mean steps", "median s",
                  "tokens/sample")


def summary_row(report: dict[str, Any]) -> list[Any]:
    """One comparable row per run (the same columns for every dataset and ablation)."""
    cost = report["cost"]
    return [report["dataset"], report.get("split"), report.get("mode"), report["n"], report["errors"],
            report["main_metric"], report["score"], cost["mean_steps"], cost["median_seconds"], cost["mean_tokens"]]


def _rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def _task_sections(report: dict[str, Any]) -> list[str]:
    """VQA metrics over VQA rows and grounding metrics over grounding rows, each under its own title."""
    lines: list[str] = []
    if report.get("vqa"):
        lines += [f"## VQA ({_rows(report['vqa']['n'])}, x100)", ""]
        lines += markdown_table(("metric", "value", "n"), [[name, m["score"], m["n"]] for name, m in report["metrics"].items()])
    fit = report.get("answer_fit")
    if fit:
        lines += [f"Answers whose type does not fit the question: {format_cell(fit['share'])}% ({fit['misfit']} of {fit['n']}).", ""]
        lines += markdown_table(("expected", "n", "misfit", "share"),
                        [[k, g["n"], g["misfit"], g["share"]] for k, g in fit["by_kind"].items()])
    grounding = report.get("grounding")
    if grounding:
        lines += [f"## Grounding ({_rows(grounding['n'])}, x100)", ""]
        lines += markdown_table(("metric", "value"), [[k, v] for k, v in grounding.items() if k != "n"])
    return lines


def render_markdown(report: dict[str, Any]) -> str:
    lines = [f"# Evaluation: {report['dataset']} ({report.get('split') or 'default split'}), mode {report.get('mode')}", ""]
    if report.get("mixed_settings"):
        lines += ["**Warning:** this run directory mixes settings (resumed with --force); see run.json.", ""]
    lines += markdown_table(SUMMARY_HEADER, [summary_row(report)])
    lines += _task_sections(report)
    for name, groups in report["breakdowns"].items():
        if not groups:
            continue
        lines += [f"## By {name.replace('_', ' ')}", ""]
        has_norm = any("normalized" in g for g in groups.values())
        # A category can hold rows of both tasks: each row counts with its own main score.
        label = "score" if name == "category" else report["main_metric"] or "score"
        header = ("type", "n", label) + (("normalized_match",) if has_norm else ())
        lines += markdown_table(header, [[k, g["n"], g["score"], *([g.get("normalized")] if has_norm else [])] for k, g in groups.items()])
    if report.get("checks"):
        lines += ["## Answer checks (rows where each refused an answer; score of those rows)", ""]
        lines += markdown_table(("check", "fired", "score"), [[k, c["fired"], c["score"]] for k, c in report["checks"].items()])
    cost = report["cost"]
    lines += ["## Cost (per sample unless said)", ""]
    lines += markdown_table(("mean steps", "median s", "mean s", "total s", "LLM calls", "prompt tokens", "generated tokens"),
                    [[cost["mean_steps"], cost["median_seconds"], cost["mean_seconds"], cost["total_seconds"],
                      cost["calls_per_sample"], cost["prompt_tokens_per_sample"], cost["completion_tokens_per_sample"]]])
    if report.get("prediction_files"):
        lines += ["## Prediction files", ""] + [f"- `{p}`" for p in report["prediction_files"]] + [""]
    return "\n".join(lines)


def write_report(run_dir: Path, records: Sequence[Record] | None = None) -> dict[str, Any]:
    """Build and write ``report.json``, ``report.md`` and the prediction files from ``results.jsonl``
    (or the given records); returns the report."""
    run_dir = Path(run_dir)
    if records is None:
        records = ResultsFile(run_dir / RESULTS).load().records
    report = build_report(records, read_run_file(run_dir))
    report["prediction_files"] = [str(p.relative_to(run_dir)) for p in write_prediction_files(records, run_dir)]
    (run_dir / REPORT_JSON).write_text(json.dumps(report, indent=2, default=str) + "\n")
    (run_dir / REPORT_MD).write_text(render_markdown(report))
    return report
