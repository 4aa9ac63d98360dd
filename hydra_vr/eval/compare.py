"""Side-by-side figures of several run directories, one row per run (``hydra-vr compare``).

Every figure comes from :func:`hydra_vr.eval.report.build_report` over the run's stored records,
re-scored in memory with the current scorer (nothing on disk changes), so that a run made with
older code lines up with a new one; this module only picks the report's fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra_vr.eval.report import build_report, markdown_table
from hydra_vr.eval.rescore import rescore_records, run_dataset
from hydra_vr.eval.store import RESULTS, ResultsFile, RunDirError, read_run_file

# (key in a row, column title); values are percentages where the report's are.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("run", "run"), ("dataset", "dataset"), ("mode", "mode"), ("strategy", "strategy"), ("samples", "samples"),
    ("vqa_metric", "VQA metric"), ("accuracy", "accuracy"), ("acc@0.5", "Acc@0.5"), ("miou", "mIoU"),
    ("type_misfit", "type misfit %"), ("mean_steps", "mean steps"), ("llm_calls", "LLM calls/sample"),
    ("prompt_tokens", "prompt tok/sample"), ("generated_tokens", "gen tok/sample"),
    ("peak_prompt", "peak prompt tok"), ("median_seconds", "median s/sample"), ("errors", "errors"),
    ("checks", "checks fired (score)"),
)


class NotARunError(RunDirError):
    """A folder given to compare is not a run directory made by ``hydra-vr eval``."""


@dataclass(frozen=True)
class RunReport:
    path: Path
    run: dict[str, Any]  # run.json's content ({} when missing)
    report: dict[str, Any]


def _load_records(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``run.json`` and the run's records, re-scored with the current scorer."""
    if not run_dir.is_dir():
        raise NotARunError(f"{run_dir}: not a folder (expected a run directory made by 'hydra-vr eval --out')")
    if not (run_dir / RESULTS).is_file():
        raise NotARunError(f"{run_dir}: not an eval run (no {RESULTS}; expected a folder made by 'hydra-vr eval --out')")
    records = rescore_records(ResultsFile(run_dir / RESULTS).load().records, run_dataset(run_dir)).records
    return read_run_file(run_dir) or {}, records


def load_run_report(run_dir: Path) -> RunReport:
    """The report of ``run_dir``'s records, re-scored with the current scorer."""
    run_dir = Path(run_dir)
    run, records = _load_records(run_dir)
    return RunReport(run_dir, run, build_report(records, run))


def comparison_row(loaded: RunReport, name: str | None = None) -> dict[str, Any]:
    """One run's row: its report's figures under the keys of :data:`COLUMNS`."""
    report, cost = loaded.report, loaded.report["cost"]
    vqa, grounding, fit = report.get("vqa") or {}, report.get("grounding") or {}, report.get("answer_fit") or {}
    return {
        "run": name or loaded.path.name, "path": str(loaded.path), "dataset": report["dataset"],
        "mode": report.get("mode"), "strategy": (loaded.run.get("settings") or {}).get("strategy"),
        "samples": report["n"], "vqa_metric": vqa.get("metric"), "accuracy": vqa.get("score"),
        "acc@0.5": grounding.get("acc@0.5"), "miou": grounding.get("miou"), "type_misfit": fit.get("share"),
        "mean_steps": cost["mean_steps"], "llm_calls": cost["calls_per_sample"],
        "prompt_tokens": cost["prompt_tokens_per_sample"], "generated_tokens": cost["completion_tokens_per_sample"],
        "peak_prompt": _peaks(cost.get("peak_prompt_tokens")), "median_seconds": cost["median_seconds"],
        "errors": report["errors"], "checks": _fired(report.get("checks")),
    }


def _fired(checks: dict[str, dict[str, Any]] | None) -> str | None:
    """``miscount 3 (33.3), unfounded_negative 1 (0.0)``: how often each answer check refused an answer, and the
    mean score of those rows."""
    return ", ".join(f"{name} {c['fired']} ({c['score']})" for name, c in checks.items()) if checks else None


def _peaks(peaks: dict[str, int] | None) -> str | None:
    """``manager 1031, worker 2790``: the largest prompt per role, where a strategy records it."""
    return ", ".join(f"{role} {n}" for role, n in sorted(peaks.items())) if peaks else None


def compare_runs(run_dirs: Sequence[Path], *, common: bool = False) -> list[dict[str, Any]]:
    """A row per run, in the order given; runs are named by folder, by path where two names clash.

    ``common``: every row over only the samples all the runs finished (the same questions for all).
    """
    runs = [(Path(d), *_load_records(Path(d))) for d in run_dirs]  # each run read and re-scored once
    if common and runs:
        both = set.intersection(*({r["id"] for r in records} for _, _, records in runs))
        runs = [(path, run, [r for r in records if r["id"] in both]) for path, run, records in runs]
    loaded = [RunReport(path, run, build_report(records, run)) for path, run, records in runs]
    names = [r.path.name for r in loaded]
    rows = [comparison_row(r, r.path.name if names.count(r.path.name) == 1 else str(r.path)) for r in loaded]
    if any(row["strategy"] for row in rows):
        for row in rows:  # beside other strategies, a run that named none ran HYDRA (the default)
            row["strategy"] = row["strategy"] or "hydra"
            if row["strategy"] not in ("hydra", "vipergpt"):
                row["mode"] = None  # --mode picks HYDRA's ablations; other strategies ignore it
    return rows


def shown_columns(rows: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """The columns worth showing: strategy and task columns only when some run has a value."""
    optional = {"strategy", "vqa_metric", "accuracy", "acc@0.5", "miou", "type_misfit", "peak_prompt", "checks"}
    return [(k, t) for k, t in COLUMNS if k not in optional or any(r.get(k) is not None for r in rows)]


def render_markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """The comparison as a Markdown table (for the README)."""
    columns = shown_columns(rows)
    return "\n".join(markdown_table([t for _, t in columns], [[r.get(k) for k, _ in columns] for r in rows]))
