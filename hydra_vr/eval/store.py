"""The run directory on disk: ``results.jsonl`` (append-only, crash-safe), ``run.json``, a lock.

Crash safety: every record is one ``write`` of one complete line, then ``fsync``, so a killed
process leaves at most a partial last line. On reading, a line that does not parse as a record
(a partial last line, garbage) is dropped and the file is rewritten without it, atomically, before
anything is appended; the dropped samples are simply not finished, so the runner redoes them.
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RESULTS = "results.jsonl"
RUN_FILE = "run.json"
LOCK_FILE = ".lock"


class RunDirError(RuntimeError):
    """The run directory cannot be used as asked (locked, other settings); the message says why."""


@dataclass
class LoadedResults:
    records: list[dict[str, Any]] = field(default_factory=list)  # in file order, one per id
    dropped_lines: list[int] = field(default_factory=list)  # 1-based numbers of unusable lines
    duplicates: int = 0

    @property
    def ids(self) -> set[str]:
        return {r["id"] for r in self.records}


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("id"), str):
        return None
    return record


class ResultsFile:
    """``results.jsonl``: one JSON record per finished sample."""

    def __init__(self, path: Path, *, durable: bool = True) -> None:
        self.path = Path(path)
        self.durable = durable  # fsync each line: survives power loss, not only a killed process
        self._fd: int | None = None

    def load(self) -> LoadedResults:
        """Read every usable record; a repeated id keeps its first record."""
        out = LoadedResults()
        if not self.path.exists():
            return out
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        # A last piece without its newline is a write cut short, even if it happens to parse.
        complete, tail = lines[:-1], lines[-1]
        seen: set[str] = set()
        for number, line in enumerate(complete, 1):
            if not line.strip():
                continue
            record = _parse(line)
            if record is None:
                out.dropped_lines.append(number)
            elif record["id"] in seen:
                out.duplicates += 1
            else:
                seen.add(record["id"])
                out.records.append(record)
        if tail.strip():
            out.dropped_lines.append(len(lines))
        return out

    def repair(self) -> LoadedResults:
        """:meth:`load`, then rewrite the file with only the usable records when anything was dropped."""
        loaded = self.load()
        if loaded.dropped_lines or loaded.duplicates:
            self.rewrite(loaded.records)
        return loaded

    def rewrite(self, records: list[dict[str, Any]]) -> None:
        """Replace the file's content atomically (tmp file, fsync, rename)."""
        self.close()
        tmp = self.path.with_name(self.path.name + ".tmp")
        with tmp.open("wb") as f:
            f.writelines(_line(r) for r in records)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        _fsync_dir(self.path.parent)

    def append(self, record: dict[str, Any]) -> None:
        """Append one record as one line in a single write (then fsync when durable)."""
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        data = _line(record)
        written = os.write(self._fd, data)
        while written < len(data):  # short writes are rare (signals, full disk) but possible
            written += os.write(self._fd, data[written:])
        if self.durable:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> ResultsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _line(record: dict[str, Any]) -> bytes:
    # ensure_ascii keeps the line free of raw newlines or odd separators whatever the answer holds.
    return (json.dumps(record, ensure_ascii=True, default=str) + "\n").encode("ascii")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class RunLock:
    """An exclusive ``flock`` on ``RUN_DIR/.lock``: a second run on the same directory is refused.

    The kernel drops the lock when the holder dies, even by SIGKILL, so a killed run never leaves
    a stale lock behind and the rerun can start at once.
    """

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunDirError(
                f"{self.path.parent} is in use by another eval run (pid {holder}); "
                "wait for it to finish or write to another --out directory"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def read_run_file(run_dir: Path) -> dict[str, Any] | None:
    path = Path(run_dir) / RUN_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except ValueError as exc:
        raise RunDirError(f"{path} is not valid JSON ({exc}); remove it or pass --force") from None
    return data if isinstance(data, dict) else None


def write_run_file(run_dir: Path, data: dict[str, Any]) -> None:
    path = Path(run_dir) / RUN_FILE
    tmp = path.with_name(RUN_FILE + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)


# Settings a resume may change: another --limit takes a longer or shorter prefix of the same
# samples in the same order, so the records already there stay comparable.
RESUMABLE_SETTINGS = frozenset({"limit"})


def settings_differences(stored: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """``key: stored -> current`` for every setting that differs (those a resume may change left out)."""
    keys = sorted((set(stored) | set(current)) - RESUMABLE_SETTINGS)
    return [f"{k}: {stored.get(k)!r} -> {current.get(k)!r}" for k in keys if stored.get(k) != current.get(k)]


def check_settings(run_dir: Path, settings: dict[str, Any], *, force: bool = False) -> dict[str, Any]:
    """Write ``run.json`` on first start; on resume refuse other settings unless ``force``.

    Returns the content of ``run.json`` as written (a forced change keeps the old settings under
    ``previous`` so the report can say the file mixes runs).
    """
    stored = read_run_file(run_dir)
    if stored is None:
        data = {"settings": settings, "previous": []}
        write_run_file(run_dir, data)
        return data
    old = stored.get("settings", {})
    diffs = settings_differences(old, settings)
    if not diffs:
        if old != settings:  # only a resumable setting changed (a longer --limit): record the latest
            stored = {**stored, "settings": settings}
            write_run_file(run_dir, stored)
        return stored
    if not force:
        raise RunDirError(
            f"{run_dir} holds a run with other settings ({'; '.join(diffs)}). Resuming would mix "
            "results: use another --out directory (one per ablation), or --force to continue anyway"
        )
    data = {"settings": settings, "previous": [*stored.get("previous", []), old]}
    write_run_file(run_dir, data)
    return data
