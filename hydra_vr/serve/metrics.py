"""Prometheus metrics of one server, in its own registry (two apps in one process never mix counts)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

# Episodes take from tens of milliseconds (scripted LLM) to minutes (a 1.5B model on 2 cores).
EPISODE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 60, 120, 300, 600)


class ServeMetrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.queued = Gauge("hydra_vr_jobs_queued", "Jobs accepted and waiting for a worker.", registry=self.registry)
        self.running = Gauge("hydra_vr_jobs_running", "Jobs whose episode is running.", registry=self.registry)
        self.done = Counter("hydra_vr_jobs_done", "Jobs finished with a result.", registry=self.registry)
        self.failed = Counter("hydra_vr_jobs_failed", "Jobs that ended with an error.", registry=self.registry)
        self.rejected = Counter("hydra_vr_jobs_rejected", "Submissions refused with 429 (queue full).", registry=self.registry)
        self.episode_seconds = Histogram("hydra_vr_episode_seconds", "Wall-clock seconds of one episode.",
                                         buckets=EPISODE_BUCKETS, registry=self.registry)

    def render(self) -> bytes:
        return generate_latest(self.registry)
