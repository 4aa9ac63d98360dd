"""The run report, built from result records alone: ``report.json`` and ``report.md``.

Scores are percentages (x100). Every report has the same summary row (dataset, mode, n, errors,
main metric, steps, seconds, tokens) so that ablation runs line up; the breakdowns follow the
benchmark: GQA structural / semantic types and binary vs open (official ``gqa_breakdown``),
A-OKVQA direct answer (difficult questions skipped, as prescribed) and multiple choice,
RefCOCO Acc@0.5, mean IoU with failures counted as 0, and the failure rate.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hydra_vr.eval.metrics import gqa_breakdown, gqa_exact_match, gqa_normalized_match, summarize_grounding
from hydra_vr.eval.predictions import write_prediction_files
from hydra_vr.eval.scoring import metric_family
from hydra_vr.eval.store import RESULTS, ResultsFile, read_run_file

REPORT_JSON = "report.json"
REPORT_MD = "report.md"
Record = dict[str, Any]


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


def _grounding(records: Sequence[Record]) -> dict[str, Any]:
    pairs = [((r.get("boxes") or [None])[0], r["gt"]["box"]) for r in records if "box" in r.get("gt", {})]
    if not pairs:
        return {}
    s = summarize_grounding(pairs)
    return {"acc@0.5": _pct(s.accuracy), "miou": _pct(s.mean_iou), "failure_rate": _pct(s.failure_rate), "n": s.count}


def _cost(records: Sequence[Record]) -> dict[str, Any]:
    n = len(records) or 1
    llm = Counter()
    for r in records:
        llm.update({k: float(v) for k, v in (r.get("llm") or {}).items()})
    return {
        "mean_steps": round(sum(r.get("steps", 0) for r in records) / n, 3),
        "mean_seconds": round(sum(r.get("seconds", 0.0) for r in records) / n, 3),
        "total_seconds": round(sum(r.get("wall_seconds", 0.0) for r in records), 3),
        "llm_calls": int(llm["calls"]),
        "prompt_tokens": int(llm["prompt_tokens"]),
        "completion_tokens": int(llm["completion_tokens"]),
        "mean_tokens": round((llm["prompt_tokens"] + llm["completion_tokens"]) / n, 1),
    }


def build_report(records: Sequence[Record], run: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report of ``records`` (one per sample); ``run`` is ``run.json``'s content, if any."""
    settings = (run or {}).get("settings", {})
    dataset = str(records[0].get("dataset")) if records else str(settings.get("dataset", ""))
    main = Counter(r.get("metric") for r in records if r.get("metric")).most_common(1)
    main_metric = main[0][0] if main else None
    metrics = _metric_means(records)
    breakdowns: dict[str, Any] = {}
    family = metric_family(dataset) if dataset else "auto"
    if family == "gqa":
        breakdowns.update(_gqa_sections(records))
    elif family == "vqa":
        breakdowns["question_type"] = _groups(records, lambda r: r.get("meta", {}).get("question_type"))
        breakdowns["answer_type"] = _groups(records, lambda r: r.get("meta", {}).get("answer_type"))
    elif family == "grounding":
        breakdowns["category"] = _groups(records, lambda r: r.get("meta", {}).get("category"))
    if len({r.get("task") for r in records}) > 1:
        breakdowns["task"] = _groups(records, lambda r: r.get("task"))
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
        "score": metrics.get(main_metric, {}).get("score") if main_metric else None,
        "metrics": metrics,
        "grounding": _grounding(records),
        "breakdowns": breakdowns,
        "cost": _cost(records),
    }


# ------------------------------------------------------------------------------------ markdown


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
    return lines + [""]


SUMMARY_HEADER = ("dataset", "split", "mode", "n", "errors", "metric", "score", "mean steps", "mean s", "tokens/sample")


def summary_row(report: dict[str, Any]) -> list[Any]:
    """One comparable row per run (the same columns for every dataset and ablation)."""
    cost = report["cost"]
    return [report["dataset"], report.get("split"), report.get("mode"), report["n"], report["errors"],
            report["main_metric"], report["score"], cost["mean_steps"], cost["mean_seconds"], cost["mean_tokens"]]


def render_markdown(report: dict[str, Any]) -> str:
    lines = [f"# Evaluation: {report['dataset']} ({report.get('split') or 'default split'}), mode {report.get('mode')}", ""]
    if report.get("mixed_settings"):
        lines += ["**Warning:** this run directory mixes settings (resumed with --force); see run.json.", ""]
    lines += _table(SUMMARY_HEADER, [summary_row(report)])
    lines += ["## Metrics (x100)", ""]
    rows = [[name, m["score"], m["n"]] for name, m in report["metrics"].items()]
    rows += [[name, value, report["grounding"]["n"]] for name, value in report["grounding"].items() if name != "n"]
    lines += _table(("metric", "value", "n"), rows)
    for name, groups in report["breakdowns"].items():
        if not groups:
            continue
        lines += [f"## By {name.replace('_', ' ')}", ""]
        has_norm = any("normalized" in g for g in groups.values())
        header = ("type", "n", report["main_metric"] or "score") + (("normalized_match",) if has_norm else ())
        lines += _table(header, [[k, g["n"], g["score"], *([g.get("normalized")] if has_norm else [])] for k, g in groups.items()])
    cost = report["cost"]
    lines += ["## Cost", ""]
    lines += _table(("mean steps", "mean seconds", "total seconds", "LLM calls", "prompt tokens", "completion tokens"),
                    [[cost["mean_steps"], cost["mean_seconds"], cost["total_seconds"], cost["llm_calls"],
                      cost["prompt_tokens"], cost["completion_tokens"]]])
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
