"""Batch evaluation on Ray actors: the per-sample records of :mod:`hydra_vr.eval.runner`, made elsewhere.

Only the driver touches the run directory: workers return records, and the trace each one wrote
into its own node's temp folder comes back inside the record (``_trace_json``) and is written by
the driver under ``RUN_DIR/traces``, so a multi-node run leaves exactly the files a local one
does. Images, model files and the venv must exist under the same paths on every node.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from hydra_vr.datasets import Sample
from hydra_vr.eval.sample_eval import AgentSpec, error_record, evaluate_with_spec
from hydra_vr.scale.settings import RaySettings

TRACE_PAYLOAD = "_trace_json"


def remote_evaluate(spec: AgentSpec, dataset: str, traces: bool, sample: Sample) -> dict[str, Any]:
    """Runs on a worker: :func:`evaluate_with_spec`, with the trace file's text moved into the record."""
    if not traces:
        return evaluate_with_spec(spec, sample, dataset, None)
    # Named "traces" like the run's folder, so the record's relative trace path is the local one.
    local = Path(tempfile.gettempdir()) / f"hydra-vr-ray-{os.getpid()}" / "traces"
    record = evaluate_with_spec(spec, sample, dataset, local)
    if record.get("trace"):
        path = local / Path(record["trace"]).name
        record = {**record, TRACE_PAYLOAD: path.read_text()}
        path.unlink()
    return record


def _save_trace(trace_dir: Path, record: dict[str, Any]) -> dict[str, Any]:
    text = record.pop(TRACE_PAYLOAD, None)
    if text is not None and record.get("trace"):
        trace_dir.mkdir(parents=True, exist_ok=True)
        final = trace_dir / Path(record["trace"]).name
        tmp = final.with_name(f".{final.name}.driver.tmp")
        tmp.write_text(text)
        os.replace(tmp, final)  # atomic: a killed driver never leaves half a trace
    return record


class RayResults:
    """Iterate the records of ``pending`` evaluated on Ray; ``status()`` tells the live actor count."""

    def __init__(self, pending: Sequence[Sample], dataset: str, trace_dir: Path | None, spec: AgentSpec,
                 settings: RaySettings) -> None:
        self.pending, self.dataset, self.trace_dir = pending, dataset, trace_dir
        self.spec, self.settings = spec, settings
        self.pool: Any = None
        self._gen = self._records()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._gen

    def close(self) -> None:
        self._gen.close()  # leaves the pool and the cluster connection (kills the actors)

    def status(self) -> str:
        return f" | {self.pool.stats.describe()}" if self.pool is not None else " | connecting"

    def _records(self) -> Iterator[dict[str, Any]]:
        from hydra_vr.eval.runner import _worker_spec  # one rule for llama.cpp threads, local or not
        from hydra_vr.scale.cluster import ray_session
        from hydra_vr.scale.pool import RayPool

        spec = _worker_spec(self.spec, self.settings.threads())
        fn = partial(remote_evaluate, spec, self.dataset, self.trace_dir is not None)
        mode = spec.config.agent.mode

        def poisoned(sample: Sample, reason: str) -> dict[str, Any]:
            return error_record(sample, self.dataset, f"WorkerDied: {reason}", mode=mode)

        with ray_session(self.settings) as ray, RayPool(ray, self.settings, fn, key=lambda s: s.id,
                                                         on_poison=poisoned) as pool:
            self.pool = pool
            for record in pool.run(self.pending):
                yield _save_trace(self.trace_dir, record) if self.trace_dir is not None else record


__all__ = ["RayResults", "TRACE_PAYLOAD", "remote_evaluate"]
