"""Read-only views of eval run folders under one root (``--runs-dir``).

A run is a folder directly under the root holding ``results.jsonl`` or ``report.json`` (see
``hydra_vr.eval``). Names are checked against the root: one plain path segment, and the folder
must resolve inside the root (no ``..``, no symlink out). Reports are read defensively: their
fields change as the eval code grows, so only a few are looked at and the rest passed through.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from hydra_vr.eval.report import REPORT_JSON, REPORT_MD, build_report
from hydra_vr.eval.store import RESULTS, RUN_FILE, ResultsFile, RunDirError, read_run_file

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,199}$")
CORRECT_AT = 0.5  # a sample counts as right when its main score is at least this (VQA accuracy is graded)


class RunNotFound(LookupError):
    """No such run or sample; the API answers 404."""


class BadRunName(ValueError):
    """A run name that is not one plain folder name under the root; the API answers 400."""


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def is_correct(record: dict[str, Any]) -> bool | None:
    score = record.get("score")
    if not isinstance(score, (int, float)):
        return None
    return float(score) >= CORRECT_AT and not record.get("error")


def sample_summary(record: dict[str, Any]) -> dict[str, Any]:
    """The fields the samples table shows; the whole record is in the sample view."""
    keys = ("id", "task", "query", "prediction", "boxes", "gt", "metric", "score", "steps", "seconds", "error", "mode")
    out = {k: record.get(k) for k in keys}
    out["correct"] = is_correct(record)
    out["has_trace"] = bool(record.get("trace"))
    return out


class RunsBrowser:
    def __init__(self, root: Path | None, cache_size: int = 4) -> None:
        self.root = Path(root).expanduser().resolve() if root is not None else None
        self._cache: OrderedDict[str, tuple[tuple[float, int], list[dict[str, Any]]]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    # ----------------------------------------------------------------- paths
    def run_dir(self, name: str) -> Path:
        if not _NAME.match(name) or name in (".", ".."):
            raise BadRunName(f"bad run name {name!r}: one folder name under the runs folder (letters, digits, . _ -)")
        if self.root is None:
            raise RunNotFound("this server has no runs folder (start it with --runs-dir DIR)")
        path = (self.root / name).resolve()
        if path.parent != self.root:
            raise BadRunName(f"run {name!r} is outside the runs folder")
        if not path.is_dir() or not ((path / RESULTS).is_file() or (path / REPORT_JSON).is_file()):
            raise RunNotFound(f"no eval run named {name!r} under the runs folder")
        return path

    def _inside(self, run: Path, relative: str) -> Path | None:
        """``run/relative`` when it resolves inside ``run`` and is a file; else None."""
        path = (run / relative).resolve()
        return path if path.is_relative_to(run) and path.is_file() else None

    # ------------------------------------------------------------------ views
    def list_runs(self) -> list[dict[str, Any]]:
        if self.root is None or not self.root.is_dir():
            return []
        runs = []
        for child in sorted(self.root.iterdir()):
            try:
                path = self.run_dir(child.name)
            except (BadRunName, RunNotFound):
                continue
            report = _read_json(path / REPORT_JSON)
            report = report if isinstance(report, dict) else {}
            runs.append({
                "name": child.name, "dataset": report.get("dataset"), "split": report.get("split"),
                "mode": report.get("mode"), "n": report.get("n"), "errors": report.get("errors"),
                "main_metric": report.get("main_metric"), "score": report.get("score"),
                "has_report": bool(report), "modified": path.stat().st_mtime,
            })
        return runs

    def report(self, name: str) -> dict[str, Any]:
        """``report.json`` as written, or one built from the results when there is none yet."""
        path = self.run_dir(name)
        report = _read_json(path / REPORT_JSON)
        built = False
        if not isinstance(report, dict):
            try:
                run = read_run_file(path)
            except RunDirError:
                run = None
            report, built = build_report(self.records(name), run), True
        markdown = (path / REPORT_MD).read_text(errors="replace") if (path / REPORT_MD).is_file() else None
        settings = _read_json(path / RUN_FILE)
        return {"name": name, "report": report, "built_from_results": built, "markdown": markdown,
                "run": settings if isinstance(settings, dict) else None}

    def records(self, name: str) -> list[dict[str, Any]]:
        """The run's result records, cached until ``results.jsonl`` changes (size or mtime)."""
        path = self.run_dir(name) / RESULTS
        if not path.is_file():
            return []
        stat = path.stat()
        key = (stat.st_mtime, stat.st_size)
        with self._lock:
            hit = self._cache.get(str(path))
            if hit is not None and hit[0] == key:
                self._cache.move_to_end(str(path))
                return hit[1]
        records = ResultsFile(path).load().records  # load() only reads; repair() would write
        with self._lock:
            self._cache[str(path)] = (key, records)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return records

    def samples(self, name: str, *, correct: bool | None = None, q: str | None = None,
                offset: int = 0, limit: int = 50) -> dict[str, Any]:
        records = self.records(name)
        needle = (q or "").strip().lower()
        picked = []
        for r in records:
            if correct is not None and is_correct(r) is not correct:
                continue
            if needle and needle not in " ".join(str(r.get(k) or "") for k in ("id", "query", "prediction", "gt")).lower():
                continue
            picked.append(r)
        page = picked[offset: offset + limit]
        return {"run": name, "total": len(picked), "offset": offset, "limit": limit, "items": [sample_summary(r) for r in page]}

    def _record(self, name: str, sample_id: str) -> dict[str, Any]:
        for r in self.records(name):
            if r.get("id") == sample_id:
                return r
        raise RunNotFound(f"run {name!r} has no sample {sample_id!r}")

    def sample(self, name: str, sample_id: str) -> dict[str, Any]:
        """The record, its trace (when the run kept one) and whether it is right."""
        record = self._record(name, sample_id)
        trace = None
        if isinstance(record.get("trace"), str):
            path = self._inside(self.run_dir(name), record["trace"])  # a results file may be edited by hand
            trace = _read_json(path) if path is not None else None
        return {"run": name, "record": {**record, "correct": is_correct(record)}, "trace": trace}

    def sample_image(self, name: str, sample_id: str) -> Path:
        """The sample's image file, when it still exists and is an image (never anything else)."""
        record = self._record(name, sample_id)
        path = Path(str(record.get("image") or ""))  # as the eval wrote it (relative: to where it ran)
        if not record.get("image") or not path.is_file():
            raise RunNotFound(f"the image of sample {sample_id!r} is not on this machine")
        try:
            with Image.open(path) as img:
                img.verify()
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
            raise RunNotFound(f"the image of sample {sample_id!r} is not a readable image") from None
        return path
