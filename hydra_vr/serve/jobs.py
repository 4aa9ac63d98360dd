"""Jobs and the bounded queue in front of the loaded models.

Worker threads (``concurrency`` of them) each own one agent and take jobs from a bounded queue; a
full queue refuses new jobs (the API answers 429). Every accepted job ends ``done`` or ``failed``:
a worker catches everything an episode raises, and jobs still queued at shutdown are failed with
that reason. Finished jobs are kept for GET, up to ``keep_jobs``, oldest dropped first.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from hydra_vr.serve.metrics import ServeMetrics

log = logging.getLogger(__name__)

Status = Literal["queued", "running", "done", "failed"]
FINISHED: tuple[Status, ...] = ("done", "failed")


@dataclass
class JobRequest:
    task: Literal["vqa", "grounding"]
    query: str
    image_path: Path
    image_label: str  # "sample:bus" or "upload"; never a client's file name
    mode: str | None = None
    strategy: str = "hydra"
    owned_image: bool = False  # an upload the server wrote: deleted with the job


@dataclass
class Job:
    id: str
    request: JobRequest
    status: Status = "queued"
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    result: dict[str, Any] | None = None  # EpisodeResult.to_dict()
    error: str | None = None
    episode_seconds: float | None = None  # agent.run alone, as the worker timed it
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (event name, data)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _listeners: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = field(default_factory=list, repr=False)

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED

    def publish(self, name: str, data: dict[str, Any]) -> None:
        """Append an event and wake every SSE stream waiting on this job (from any thread)."""
        with self._lock:
            self.events.append((name, data))
            listeners = list(self._listeners)
        self._wake(listeners)

    def finish(self, result: dict[str, Any] | None, error: str | None) -> None:
        """Set the outcome and append the final ``result`` event under one lock, so a stream that
        sees the job finished has also got that event."""
        with self._lock:
            self.result, self.error, self.finished = result, error, time.time()
            self.status = "failed" if error else "done"
            self.events.append(("result", {"id": self.id, "status": self.status, "error": error, "result": result}))
            listeners = list(self._listeners)
        self._wake(listeners)

    @staticmethod
    def _wake(listeners: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]) -> None:
        for loop, event in listeners:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # that stream's loop is closed: nobody is waiting there any more
                pass

    def events_since(self, index: int) -> tuple[list[tuple[str, dict[str, Any]]], bool]:
        """Events from ``index`` on, and whether the job had finished when they were read."""
        with self._lock:
            return self.events[index:], self.is_finished

    async def wait_for_event(self, index: int, timeout: float) -> bool:
        """Wait until an event beyond ``index`` exists (True) or ``timeout`` seconds pass (False)."""
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        with self._lock:
            if len(self.events) > index or self.is_finished:
                return True
            self._listeners.append(entry)
        try:
            await asyncio.wait_for(event.wait(), timeout)
            return True
        except asyncio.TimeoutError:
            return False
        finally:
            with self._lock:
                self._listeners.remove(entry)


class QueueFull(RuntimeError):
    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the job queue is full; retry after {retry_after} s")
        self.retry_after = retry_after


# A worker's episode function: runs the job, publishing step events through ``publish``, and
# returns the episode's result dict (answer, boxes, steps, error...).
EpisodeFn = Callable[[Job], dict[str, Any]]
WorkerFactory = Callable[[], EpisodeFn]


class JobQueue:
    """``concurrency`` worker threads behind a queue of at most ``queue_size`` waiting jobs."""

    def __init__(self, worker_factory: WorkerFactory, metrics: ServeMetrics, *, concurrency: int = 1,
                 queue_size: int = 32, keep_jobs: int = 1000, on_drop: Callable[[Job], None] | None = None) -> None:
        self._worker_factory = worker_factory
        self.metrics = metrics
        self.concurrency = concurrency
        self.keep_jobs = keep_jobs
        self._on_drop = on_drop
        self._queue: queue.Queue[Job | None] = queue.Queue(maxsize=queue_size)
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._running = 0
        self._episode_seconds: list[float] = []  # recent, for the Retry-After estimate
        self.ready_workers = 0
        self.worker_errors: list[str] = []

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> None:
        for i in range(self.concurrency):
            thread = threading.Thread(target=self._worker, name=f"hydra-vr-serve-worker-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 30.0) -> None:
        """Fail the jobs still queued, let running episodes finish (up to ``timeout``), stop workers."""
        with self._lock:
            self._stopping.set()
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                self.metrics.queued.dec()
                self._finish(job, None, "the server stopped before this job ran")
        for _ in self._threads:
            try:
                self._queue.put_nowait(None)  # wake idle workers
            except queue.Full:
                break
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    # ------------------------------------------------------------------ jobs
    def submit(self, request: JobRequest) -> Job:
        """Queue a job, or raise :class:`QueueFull` (nothing is kept then)."""
        job = Job(id=uuid.uuid4().hex, request=request)
        job.publish("queued", {"id": job.id, "status": "queued"})  # before put: a worker may take it at once
        dropped: list[Job] = []
        with self._lock:
            accepted = not self._stopping.is_set()
            if accepted:
                self.metrics.queued.inc()
                try:
                    self._queue.put_nowait(job)
                except queue.Full:
                    accepted = False
                    self.metrics.queued.dec()
                    self.metrics.rejected.inc()
                else:
                    self._jobs[job.id] = job
                    dropped = self._trim()
        if not accepted:
            raise QueueFull(self.retry_after())
        for old in dropped:
            self._dropped(old)
        return job

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def counts(self) -> dict[str, int]:
        with self._lock:
            jobs = list(self._jobs.values())
        out = {"queued": 0, "running": 0, "done": 0, "failed": 0}
        for job in jobs:
            out[job.status] += 1
        return out

    def retry_after(self) -> int:
        """Seconds until a slot is likely free: the queue's length times the recent mean episode."""
        with self._lock:
            recent = self._episode_seconds[-20:]
        mean = sum(recent) / len(recent) if recent else 1.0
        return max(1, min(600, round(mean * (self._queue.qsize() + 1) / self.concurrency)))

    def _trim(self) -> list[Job]:
        """Drop the oldest finished jobs beyond ``keep_jobs`` (called under the lock)."""
        dropped: list[Job] = []
        excess = len(self._jobs) - self.keep_jobs
        if excess <= 0:
            return dropped
        for job_id, job in list(self._jobs.items()):
            if excess <= 0:
                break
            if job.is_finished:
                del self._jobs[job_id]
                dropped.append(job)
                excess -= 1
        return dropped

    def _dropped(self, job: Job) -> None:
        if self._on_drop is not None:
            try:
                self._on_drop(job)
            except Exception:  # cleanup must never take a request down
                log.exception("dropping job %s", job.id)

    # ---------------------------------------------------------------- workers
    def _build(self) -> EpisodeFn | None:
        """This worker's episode function (loads the models), or None with the error recorded."""
        try:
            run = self._worker_factory()
        except Exception as exc:
            log.exception("building the agent failed")
            with self._lock:
                self.worker_errors = (self.worker_errors + [f"{type(exc).__name__}: {exc}"])[-5:]
            return None
        with self._lock:
            self.ready_workers += 1
        return run

    def _worker(self) -> None:
        run = self._build()  # at start, so the first job does not wait for the models
        while not self._stopping.is_set():
            job = self._queue.get()
            if job is None:
                break
            self.metrics.queued.dec()
            if run is None:
                run = self._build()  # a missing model may have been installed since
                if run is None:
                    self._finish(job, None, f"the agent could not be built: {self.worker_errors[-1]}")
                    continue
            self._run_one(run, job)
        close = getattr(run, "close", None)
        if close is not None:
            close()  # the worker's sandbox child goes with it

    def _run_one(self, run: EpisodeFn, job: Job) -> None:
        job.status, job.started = "running", time.time()
        self.metrics.running.inc()
        job.publish("running", {"id": job.id, "status": "running"})
        result: dict[str, Any] | None = None
        error: str | None = None
        t0 = time.perf_counter()
        try:
            result = run(job)
            error = result.get("error")
        except Exception as exc:  # a job must end reported, whatever the episode raised
            log.exception("job %s failed", job.id)
            error = f"{type(exc).__name__}: {exc}"
        finally:
            seconds = time.perf_counter() - t0
            self.metrics.running.dec()
            self.metrics.episode_seconds.observe(seconds)
            with self._lock:
                self._episode_seconds = (self._episode_seconds + [seconds])[-50:]
            self._finish(job, result, error)

    def _finish(self, job: Job, result: dict[str, Any] | None, error: str | None) -> None:
        (self.metrics.failed if error else self.metrics.done).inc()
        job.finish(result, error)
