"""One small JSON summary per eval run folder, the part of a run that is kept in git.

    python benchmarks/real_photos/summarize_run.py RUN_DIR [RUN_DIR ...]
    python benchmarks/real_photos/summarize_run.py runs/strategies          # every run under it
    python benchmarks/real_photos/summarize_run.py --all                    # every runs-*/ folder here

A run folder (``hydra-vr eval ... --out RUN_DIR``: ``results.jsonl``, ``run.json``, reports, traces)
stays out of git; its summary goes to ``summaries/`` (``--out``), named after the folder's path from
its ``runs`` or ``runs-DATE`` folder, ``/`` turned into ``__``:
``runs-2026-11-26/vqa-52be6ab/vipergpt`` -> ``summaries/runs-2026-11-26__vqa-52be6ab__vipergpt.json``.
A path that holds no ``results.jsonl`` itself is searched for run folders below it. A folder with
``direct.py``'s ``answers.jsonl`` (the questions asked straight) is summarised too, as strategy
``direct`` (scored with hydra-vr's answer match when hydra_vr imports, else score null).

A summary holds: ``run`` (the folder's path from ``runs*``), ``name`` (the run's name, e.g.
``vqa-52be6ab``), ``label`` (the strategy / mode folder, e.g. ``vipergpt``, ``no_rl``), ``strategy``,
``mode``, ``dataset``, ``commit`` (recorded in ``run.json`` if it is, else the hex token of the folder
name, ``vqa-52be6ab`` -> ``52be6ab``, else null), ``date`` (recorded, else from ``runs-DATE``, else the
``results.jsonl`` mtime), ``cpu`` (if recorded, else null), ``settings`` (``run.json``'s),
``git`` (the last commit that added or changed the folder's ``results.jsonl``, where the full folder can
be read back: ``git show COMMIT:PATH/results.jsonl``), the headline ``metrics`` as ``report.md`` gives
them (x100: the VQA metric over VQA rows, Acc@0.5 / mIoU over grounding rows, n, errors, seconds), and
``questions``, one line each: ``id``, ``task``, ``category``, ``q`` (the question or expression),
``prediction`` (the answer, or the first box ``[x1, y1, x2, y2]`` for grounding), ``score`` (as stored:
0..1, the Acc@0.5 hit for grounding), ``iou`` (grounding), ``seconds`` (the sample's wall time),
``error`` / ``crashed`` when there was one. Scores are the run's own, not re-scored (``paired.py``
re-scores run folders, and reads summaries as they are).

Standard library only (no venv needed). Prints one line per run: its figures, and report.json's where
the folder has one, marked when they differ (a report written before the run was resumed, say).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS, RUN_FILE, DIRECT = "results.jsonl", "run.json", "answers.jsonl"
GROUNDING_METRIC = "acc@0.5"
# Folder names that name a run's strategy or mode (rounds.py labels) rather than the run itself.
LABELS = {"hydra", "vipergpt", "hammr", "avis", "hierva", "flat", "no_rl", "one_step", "rl", "direct"}
_SKIP_DIRS = {"traces", "predictions", "__pycache__"}
_HEX = re.compile(r"^[0-9a-f]{7,40}$")
_DATE = re.compile(r"^runs-(\d{4}-\d{2}-\d{2})")
Record = dict[str, Any]


# ------------------------------------------------------------------------------------ reading


def _jsonl(path: Path) -> list[Record]:
    """Complete, parseable lines with an id; a repeated id keeps its first record (as the eval store)."""
    out, seen = [], set()
    data = path.read_bytes().split(b"\n")
    for line in data[:-1]:  # a last piece without its newline is a write cut short
        try:
            record = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(record, dict) and isinstance(record.get("id"), str) and record["id"] not in seen:
            seen.add(record["id"])
            out.append(record)
    return out


def find_runs(path: Path) -> list[Path]:
    """``path`` itself when it holds a run, else every run folder below it (sorted)."""
    if (path / RESULTS).is_file() or (path / DIRECT).is_file():
        return [path]
    found = []
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        if RESULTS in files or DIRECT in files:
            found.append(Path(root))
    return found


def run_parts(run_dir: Path) -> list[str]:
    """The folder's path from its ``runs`` / ``runs-*`` ancestor (kept), else its last two parts."""
    parts = run_dir.resolve().parts
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] == "runs" or parts[i].startswith("runs-"):
            return list(parts[i:])
    return list(parts[-2:])


def _git(run_dir: Path, results: Path) -> dict[str, Any] | None:
    """The last commit that added or changed ``results`` (a deletion does not count), if any."""
    try:
        top = subprocess.run(["git", "-C", str(run_dir), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, check=True).stdout.strip()
        out = subprocess.run(["git", "-C", top, "log", "-1", "--diff-filter=AM", "--format=%h %cI", "--",
                              str(results.resolve().relative_to(Path(top).resolve()))],
                             capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError, ValueError):
        return None
    if len(out) != 2:
        return None
    return {"commit": out[0], "date": out[1], "path": str(run_dir.resolve().relative_to(Path(top).resolve()))}


def _first_trace_strategy(run_dir: Path, records: list[Record]) -> str | None:
    for record in records[:3]:
        trace = record.get("trace")
        if isinstance(trace, str) and (run_dir / trace).is_file():
            try:
                return json.loads((run_dir / trace).read_text()).get("strategy")
            except (ValueError, OSError):
                continue
    return None


# ------------------------------------------------------------------------------------ scoring


def box_iou(a: Any, b: Any) -> float:
    """IoU of two xyxy boxes, as ``hydra_vr.eval.metrics.box_iou`` (a degenerate box scores 0)."""
    ax1, ay1, ax2, ay2 = (float(v) for v in a)
    bx1, by1, bx2, by2 = (float(v) for v in b)
    if ax2 <= ax1 or ay2 <= ay1 or bx2 <= bx1 or by2 <= by1:
        return 0.0
    iw, ih = min(ax2, bx2) - max(ax1, bx1), min(ay2, by2) - max(ay1, by1)
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    return inter / ((ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter)


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100.0 * value, 2)


def _seconds(record: Record) -> float:
    return float(record.get("wall_seconds", record.get("seconds", 0.0)) or 0.0)


def _first_box(record: Record) -> list[float] | None:
    boxes = record.get("boxes") or []
    return list(boxes[0]) if boxes and boxes[0] is not None else None


def headline(records: list[Record]) -> dict[str, Any]:
    """The figures of ``report.md``'s summary, VQA and grounding sections (``hydra_vr.eval.report``)."""
    vqa_rows = [r for r in records if r.get("task", "vqa") != "grounding"]
    means: dict[str, list[float]] = {}
    for r in vqa_rows:
        difficult = bool((r.get("meta") or {}).get("difficult_direct_answer"))
        for name, value in (r.get("scores") or {}).items():
            if not (name == "direct_answer" and difficult) and value is not None:
                means.setdefault(name, []).append(float(value))
    vqa: dict[str, Any] = {}
    if vqa_rows:
        common = Counter(r.get("metric") for r in vqa_rows if r.get("metric")).most_common(1)
        metric = common[0][0] if common else None
        vqa = {"n": len(vqa_rows), "metric": metric,
               "score": _pct(statistics.mean(means[metric])) if metric in means else None,
               **{name: _pct(statistics.mean(v)) for name, v in means.items() if name != metric}}
    pairs = [(_first_box(r), r["gt"]["box"]) for r in records
             if r.get("task") == "grounding" and "box" in (r.get("gt") or {})]
    grounding: dict[str, Any] = {}
    if pairs:
        ious = [0.0 if p is None else box_iou(p, g) for p, g in pairs]
        grounding = {"n": len(ious), GROUNDING_METRIC: _pct(sum(i >= 0.5 for i in ious) / len(ious)),
                     "miou": _pct(statistics.mean(ious)), "failure_rate": _pct(sum(p is None for p, _ in pairs) / len(pairs))}
    main, score = (vqa["metric"], vqa["score"]) if vqa else (
        (GROUNDING_METRIC, grounding[GROUNDING_METRIC]) if grounding else (None, None))
    n = len(records)
    seconds = [_seconds(r) for r in records]
    calls = sum(float((r.get("llm") or {}).get("calls", 0) or 0) for r in records)
    tokens = sum(float((r.get("llm") or {}).get(k, 0) or 0) for r in records for k in ("prompt_tokens", "completion_tokens"))
    return {
        "n": n, "errors": sum(1 for r in records if r.get("error")), "crashed": sum(1 for r in records if r.get("crashed")),
        "main_metric": main, "score": score, "vqa": vqa, "grounding": grounding,
        "mean_steps": round(sum(r.get("steps", 0) or 0 for r in records) / (n or 1), 3),
        "median_seconds": round(statistics.median(seconds), 3) if seconds else None,
        "total_seconds": round(sum(seconds), 1),
        "llm_calls_per_sample": round(calls / (n or 1), 3), "tokens_per_sample": round(tokens / (n or 1), 1),
    }


def question_row(record: Record) -> dict[str, Any]:
    row: dict[str, Any] = {"id": record["id"], "task": record.get("task", "vqa"),
                           "category": (record.get("meta") or {}).get("category"), "q": record.get("query")}
    if row["task"] == "grounding":
        box = _first_box(record)
        row["prediction"] = None if box is None else [round(float(v), 1) for v in box]
        row["score"] = record.get("score")
        gt = (record.get("gt") or {}).get("box")
        if gt is not None:
            row["iou"] = round(0.0 if box is None else box_iou(box, gt), 4)
    else:
        row["prediction"] = record.get("prediction")
        row["score"] = record.get("score")
        if (record.get("gt") or {}).get("choices"):
            row["choices"] = record["gt"]["choices"]
    if "wall_seconds" in record or "seconds" in record:
        row["seconds"] = round(_seconds(record), 2)
    if record.get("error"):
        row["error"] = str(record["error"])[:160]
    if record.get("crashed"):
        row["crashed"] = True
    return row


# ------------------------------------------------------------------------------------ summary


def _commit_from_name(parts: list[str]) -> str | None:
    for part in parts:
        for token in re.split(r"[-_.]", part):
            if _HEX.match(token) and any(c.isdigit() for c in token):
                return token
    return None


def _recorded(run: dict[str, Any], *keys: str) -> Any:
    """A key recorded in ``run.json`` (top level or settings), for runners that record it."""
    settings = run.get("settings") or {}
    for key in keys:
        for where in (run, settings):
            if where.get(key) not in (None, ""):
                return where[key]
    return None


def _direct_records(path: Path) -> list[Record]:
    """``direct.py``'s answers as eval-like records (scored when hydra_vr imports)."""
    try:
        if str(HERE.parents[1]) not in sys.path:
            sys.path.insert(0, str(HERE.parents[1]))
        from hydra_vr.eval.metrics import any_answer_match  # type: ignore[import-not-found]
    except Exception:  # noqa: BLE001 - any import failure: keep the answers unscored
        any_answer_match = None
    categories = {}
    if (HERE / "questions.jsonl").is_file():
        categories = {r["id"]: r.get("category") for r in _jsonl(HERE / "questions.jsonl")}
    out = []
    for row in _jsonl(path):
        score = float(any_answer_match(str(row.get("answer")), row.get("answers") or [])) if any_answer_match else None
        out.append({"id": row["id"], "dataset": "user", "task": "vqa", "query": row.get("question"),
                    "meta": {"category": categories.get(row["id"])}, "prediction": row.get("answer"),
                    "metric": "answer_match" if score is not None else None, "score": score,
                    "scores": {"answer_match": score} if score is not None else {}, "seconds": row.get("seconds"),
                    "mode": "direct"})
    return out


def summarize(run_dir: Path) -> dict[str, Any]:
    direct = not (run_dir / RESULTS).is_file()
    results = run_dir / (DIRECT if direct else RESULTS)
    records = _direct_records(results) if direct else _jsonl(results)
    run: dict[str, Any] = {}
    if (run_dir / RUN_FILE).is_file():
        try:
            run = json.loads((run_dir / RUN_FILE).read_text()) or {}
        except ValueError:
            run = {}
    settings = run.get("settings") or {}
    parts = run_parts(run_dir)
    modes = sorted({str(r["mode"]) for r in records if r.get("mode")})
    strategy = "direct" if direct else settings.get("strategy") or _first_trace_strategy(run_dir, records)
    mode = ", ".join(modes) if modes else settings.get("mode")
    rooted = parts[0] == "runs" or parts[0].startswith("runs-")
    own = parts[1:] if rooted else parts  # the parts that name this run (not the runs* folder)
    last = parts[-1]
    labelled = len(parts) > 1 and (last in LABELS or last in (strategy, mode))
    middle = own[:-1] if labelled else own
    commit = _recorded(run, "commit", "git_commit")
    date = _recorded(run, "date", "started", "finished")
    date_match = next((m.group(1) for m in map(_DATE.match, parts) if m), None)
    mtime = datetime.fromtimestamp(results.stat().st_mtime, tz=timezone.utc).isoformat(timespec="seconds")
    return {
        "run": "/".join(parts),
        "name": "/".join(middle) or parts[0],
        "label": last if labelled else None,
        "strategy": strategy,
        "mode": mode,
        "dataset": str(records[0].get("dataset")) if records else settings.get("dataset"),
        "split": settings.get("split"),
        "commit": commit or _commit_from_name(own),
        "commit_source": "recorded" if commit else ("folder name" if _commit_from_name(own) else None),
        "date": date or date_match or mtime,
        "date_source": "recorded" if date else ("folder name" if date_match else "results mtime"),
        "cpu": _recorded(run, "cpu", "machine", "host"),
        "settings": settings or None,
        "mixed_settings": bool(run.get("previous")) or len(modes) > 1,
        "git": _git(run_dir, results),
        "metrics": headline(records),
        "questions": [question_row(r) for r in records],
    }


def dumps(summary: dict[str, Any]) -> str:
    """Indented header, one line per question."""
    head = {k: v for k, v in summary.items() if k != "questions"}
    text = json.dumps(head, indent=1, ensure_ascii=False)[:-2]  # drop the closing "\n}"
    rows = ",\n".join("  " + json.dumps(q, ensure_ascii=False) for q in summary["questions"])
    return f'{text},\n "questions": [\n{rows}\n ]\n}}\n'


def file_name(summary: dict[str, Any]) -> str:
    return "__".join(summary["run"].split("/")) + ".json"


def _report_score(run_dir: Path) -> tuple[Any, Any] | None:
    path = run_dir / "report.json"
    if not path.is_file():
        return None
    try:
        report = json.loads(path.read_text())
    except ValueError:
        return None
    return report.get("score"), report.get("n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", type=Path, help="run folders, or folders holding run folders")
    parser.add_argument("--all", action="store_true", help=f"every runs-*/ folder in {HERE}")
    parser.add_argument("--out", type=Path, default=HERE / "summaries", help="folder for the summaries (default: %(default)s)")
    parser.add_argument("--print", action="store_true", help="write the summaries to stdout instead")
    args = parser.parse_args()
    inputs = list(args.runs) + (sorted(HERE.glob("runs-*/")) if args.all else [])
    if not inputs:
        parser.error("give run folders, or --all")
    run_dirs = [d for path in inputs for d in find_runs(path)]
    if not run_dirs:
        sys.exit("no run folder (results.jsonl) found under " + ", ".join(map(str, inputs)))
    written: dict[str, Path] = {}
    for run_dir in run_dirs:
        summary = summarize(run_dir)
        name = file_name(summary)
        if name in written and written[name] != run_dir.resolve():
            sys.exit(f"{run_dir} and {written[name]} would both be summarised as {name}")
        written[name] = run_dir.resolve()
        if args.print:
            sys.stdout.write(dumps(summary))
            continue
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / name).write_text(dumps(summary))
        m = summary["metrics"]
        vqa, ground = m["vqa"], m["grounding"]
        line = (f"{name}: n {m['n']}"
                + (f", VQA {vqa['score']} ({vqa['metric']}, {vqa['n']})" if vqa else "")
                + (f", Acc@0.5 {ground[GROUNDING_METRIC]} ({ground['n']})" if ground else ""))
        report = _report_score(run_dir)
        if report is not None:
            same = report == (m["score"], m["n"])
            line += f"; report.json {report[0]} (n {report[1]})" + ("" if same else "  <- differs")
        print(line, file=sys.stderr)


if __name__ == "__main__":
    main()
