"""What one app instance holds: its settings, job queue, runs browser and metrics (no globals)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fastapi import Request

from hydra_vr.serve.jobs import JobQueue
from hydra_vr.serve.metrics import ServeMetrics
from hydra_vr.serve.runs import RunsBrowser
from hydra_vr.serve.settings import ServeSettings


@dataclass
class ServeState:
    settings: ServeSettings
    jobs: JobQueue
    runs: RunsBrowser
    metrics: ServeMetrics
    upload_dir: Path
    sample_paths: dict[str, Path] = field(default_factory=dict)  # "sample:bus" -> its file, resolved once
    default_strategy: str = "hydra"  # the config's agent strategy: what a request that names none runs


def serve_state(request: Request) -> ServeState:
    return request.app.state.hydra
