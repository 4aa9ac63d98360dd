"""Batch evaluation: run the loop over a dataset into a resumable run directory.

``RUN_DIR`` holds ``results.jsonl`` (one record per finished sample, see
:mod:`hydra_vr.eval.sample_eval`), ``run.json`` (the settings), ``traces/<id>.json``,
``report.json`` / ``report.md`` and ``predictions/``. Running the same command again skips
finished samples; see :mod:`hydra_vr.eval.store` for what survives a kill.

Workers: ``workers=K > 1`` runs K samples at a time in K worker *processes* (spawned, not forked),
each building its own agent with :func:`evaluate_with_spec`. Threads sharing one agent were
rejected: the toolbox keeps one call log that the loop drains per step (threads would read each
other's tool calls), llama.cpp is not thread-safe (every LLM call would queue on one lock, which
removes most of the gain), and a crash in a native backend would take the whole run down.
Memory cost: each worker holds its own vision models, LLM context (KV cache, buffers) and sandbox
child. A GGUF model is memory-mapped, so its weights are shared through the page cache rather
than copied; torch / ONNX vision models and the KV cache are per process. Measured with the
embedded profile (qwen2.5-coder-0.5b GGUF, all vision roles loaded): about 1.5 GiB RSS per worker
of which about 0.65 GiB is private (the rest is the mapped GGUF and shared libraries), plus about
50 MiB for its sandbox child. Each worker's maths libraries and llama.cpp get ``cpu_count // K``
threads (unless the config sets ``llm.options.n_threads``) so that K workers do not
oversubscribe the cores. On a CPU-only machine the LLM dominates and K > 1 gains little; workers
pay off with a remote LLM (openai backend) or a GPU.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack, closing
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from hydra_vr.datasets import DatasetError, Sample
from hydra_vr.eval.report import write_report
from hydra_vr.eval.sample_eval import AgentSpec, close_agent, evaluate_sample, evaluate_with_spec
from hydra_vr.eval.store import RESULTS, ResultsFile, RunDirError, RunLock, check_settings
from hydra_vr.scale.settings import RaySettings

log = logging.getLogger(__name__)

TRACES = "traces"
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


class EvalError(RuntimeError):
    """The run cannot go on (a worker died, the agent cannot be built); rerunning resumes it."""


@dataclass(frozen=True)
class EvalSettings:
    """What makes two runs comparable; stored in ``run.json`` and checked on resume."""

    dataset: str
    data_root: str | None = None
    split: str | None = None
    limit: int | None = None
    mode: str | None = None
    config: str = "default"
    controller: str | None = None
    examples: str | None = None
    overrides: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)  # dataset loader options
    # None for HYDRA (so runs made before strategies existed still resume), else the strategy's name.
    strategy: str | None = None

    def to_dict(self) -> dict[str, Any]:
        # As run.json will read back (paths as strings, tuples as lists), so a resume compares equal.
        return json.loads(json.dumps(asdict(self), default=str))


@dataclass
class EvalOutcome:
    run_dir: Path
    total: int  # samples selected by this command
    already_done: int  # skipped: finished by an earlier run
    evaluated: int  # finished by this run
    dropped_lines: int  # unusable lines removed from results.jsonl (their samples were redone)
    seconds: float
    report: dict[str, Any]


class _RunningScore:
    """Mean of the main score over finished samples, for the progress line."""

    def __init__(self) -> None:
        self.total = 0.0
        self.scored = 0
        self.errors = 0
        self.metric = ""

    def add(self, record: dict[str, Any]) -> None:
        self.metric = record.get("metric") or self.metric
        if record.get("score") is not None:
            self.total += float(record["score"])
            self.scored += 1
        if record.get("error"):
            self.errors += 1

    def describe(self, dataset: str) -> str:
        mean = f"{100 * self.total / self.scored:5.1f}" if self.scored else "  -  "
        return f"{dataset} {self.metric or 'score'} {mean} | errors {self.errors}"


def _check_unique(samples: Sequence[Sample]) -> None:
    seen: set[str] = set()
    repeated = [s.id for s in samples if s.id in seen or seen.add(s.id)]  # type: ignore[func-returns-value]
    if repeated:
        raise DatasetError(
            f"{len(repeated)} sample id(s) occur more than once (e.g. {repeated[:3]}); "
            "results are keyed by id, so ids must be unique"
        )


def _init_worker(threads: int) -> None:
    # Runs in a fresh spawned process before any model library is imported.
    for var in _THREAD_VARS:
        os.environ.setdefault(var, str(threads))


def _worker_spec(spec: AgentSpec, threads: int) -> AgentSpec:
    """llama.cpp takes every core by default: K workers would each start that many threads."""
    llm = spec.config.llm
    if llm.backend != "llama_cpp" or "n_threads" in llm.options:
        return spec
    config = spec.config.model_copy(deep=True)
    config.llm.options["n_threads"] = threads
    return replace(spec, config=config)


def _serial(pending: Sequence[Sample], dataset: str, trace_dir: Path | None, agent: Any) -> Iterator[dict[str, Any]]:
    for sample in pending:
        yield evaluate_sample(agent, sample, dataset, trace_dir)


def _parallel(pending: Sequence[Sample], dataset: str, trace_dir: Path | None, spec: AgentSpec,
              workers: int) -> Iterator[dict[str, Any]]:
    """K samples in flight, never more: a kill loses at most K samples."""
    threads = max(1, (os.cpu_count() or 1) // workers)
    spec = _worker_spec(spec, threads)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker, initargs=(threads,))
    queue = iter(pending)
    inflight: dict[Future[dict[str, Any]], Sample] = {}

    def submit() -> None:
        sample = next(queue, None)
        if sample is not None:
            inflight[pool.submit(evaluate_with_spec, spec, sample, dataset, trace_dir)] = sample

    finished = False
    try:
        for _ in range(workers):
            submit()
        while inflight:
            done, _ = wait(inflight, return_when=FIRST_COMPLETED)
            for future in done:
                sample = inflight.pop(future)
                try:
                    record = future.result()
                except BrokenProcessPool as exc:
                    raise EvalError(f"a worker process died while evaluating sample {sample.id} ({exc}); "
                                    "finished samples are saved: rerun to resume") from exc
                except Exception as exc:  # evaluate_sample never raises per sample: this is the agent build
                    raise EvalError(f"worker failed on sample {sample.id}: {type(exc).__name__}: {exc}") from exc
                submit()
                yield record
        finished = True
    finally:
        # On an error or Ctrl-C do not wait for in-flight samples: they are redone on resume.
        pool.shutdown(wait=finished, cancel_futures=not finished)


def _progress(stack: ExitStack, enabled: bool, total: int, done: int, text: str) -> Callable[[str], None]:
    """A rich progress bar with ETA; returns ``advance(description)``."""
    if not enabled:
        return lambda _text: None
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    bar = stack.enter_context(Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("elapsed"),
        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=Console(stderr=True),
    ))
    task = bar.add_task(text, total=total, completed=done)
    return lambda description: bar.update(task, advance=1, description=description)


def run_eval(
    samples: Sequence[Sample],
    run_dir: Path | str,
    settings: EvalSettings,
    *,
    agent: Any = None,
    agent_spec: AgentSpec | None = None,
    workers: int = 1,
    force: bool = False,
    retry_errors: bool = False,
    progress: bool = False,
    traces: bool = True,
    durable: bool = True,
    ray: RaySettings | None = None,
) -> EvalOutcome:
    """Evaluate ``samples`` into ``run_dir``, skipping those already in ``results.jsonl``.

    Give a built ``agent`` (one process) or an ``agent_spec`` (required for ``workers > 1``).
    ``retry_errors`` redoes samples whose evaluation raised (``crashed`` records); episodes that
    merely failed to answer are results and stay. Raises :class:`RunDirError` when the directory
    is locked by another run or holds other settings (unless ``force``). ``ray``: evaluate on Ray
    actors instead (:mod:`hydra_vr.eval.ray_runner`; its ``workers`` replaces ``workers``).
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if agent is None and agent_spec is None:
        raise ValueError("run_eval needs an agent or an agent_spec")
    if (workers > 1 or ray is not None) and agent_spec is None:
        raise ValueError("workers > 1 needs an agent_spec: each worker process builds its own agent")
    _check_unique(samples)
    run_dir = Path(run_dir)
    t0 = time.perf_counter()
    with ExitStack() as stack:
        stack.enter_context(RunLock(run_dir))
        check_settings(run_dir, settings.to_dict(), force=force)
        store = stack.enter_context(ResultsFile(run_dir / RESULTS, durable=durable))
        loaded = store.repair()
        if loaded.dropped_lines:
            log.warning("%s: dropped unusable line(s) %s; those samples are redone", store.path, loaded.dropped_lines)
        records = loaded.records
        if retry_errors and any(r.get("crashed") for r in records):
            records = [r for r in records if not r.get("crashed")]
            store.rewrite(records)
        finished = {r["id"]: r for r in records}
        selected = {s.id for s in samples}
        pending = [s for s in samples if s.id not in finished]
        running = _RunningScore()
        for r in records:
            if r["id"] in selected:
                running.add(r)
        already = len(samples) - len(pending)
        advance = _progress(stack, progress, len(samples), already, running.describe(settings.dataset))
        trace_dir = run_dir / TRACES if traces else None
        status: Callable[[], str] = lambda: ""
        if pending:
            if ray is not None:
                from hydra_vr.eval.ray_runner import RayResults  # imports Ray only when asked for

                assert agent_spec is not None
                results = RayResults(pending, settings.dataset, trace_dir, agent_spec, ray)
                status = results.status
            elif workers > 1 and len(pending) > 1:
                assert agent_spec is not None
                results = _parallel(pending, settings.dataset, trace_dir, agent_spec, min(workers, len(pending)))
            else:
                if agent is None:
                    assert agent_spec is not None
                    agent = agent_spec.build()
                    stack.callback(close_agent, agent)
                results = _serial(pending, settings.dataset, trace_dir, agent)
            # closing(): on Ctrl-C the pool is shut down now, not whenever the generator is collected.
            with closing(results):
                for record in results:
                    store.append(record)
                    running.add(record)
                    advance(running.describe(settings.dataset) + status())
        store.close()
        report = write_report(run_dir)
    return EvalOutcome(run_dir, len(samples), already, len(pending), len(loaded.dropped_lines),
                       time.perf_counter() - t0, report)


__all__ = ["EvalError", "EvalOutcome", "EvalSettings", "RunDirError", "run_eval"]
