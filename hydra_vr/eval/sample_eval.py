"""The per-sample evaluation step: run the loop on one sample, score it, return a JSON-able record.

:func:`evaluate_sample` takes a built agent; :func:`evaluate_with_spec` takes only picklable
arguments (an :class:`AgentSpec`, a :class:`Sample`, names and paths) and builds the agent once
per process, so a process pool here, or a cluster engine later, can map it over samples.

A record holds everything the report and the official prediction files need, so that they can be
rebuilt from ``results.jsonl`` alone:

``id, dataset, task, query, image, mode, prediction, boxes, choice, gt, metric, score, scores,
steps, seconds, wall_seconds, llm {calls, prompt_tokens, completion_tokens}, error, crashed,
trace, meta``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra_vr.config import HydraConfig
from hydra_vr.datasets import Sample
from hydra_vr.datasets.loading import canonical_name
from hydra_vr.eval.scoring import Scores, score_sample

log = logging.getLogger(__name__)

# Sample meta the report and the prediction files use; the rest (rationales, GQA programs) is bulk.
_META_KEPT = (
    "split", "split_by", "types", "question_id", "image_id", "imageId", "question_type", "answer_type",
    "difficult_direct_answer", "ref_id", "sent_id", "ann_id", "category",
)
_LLM_KEPT = ("calls", "prompt_tokens", "completion_tokens")


@dataclass(frozen=True)
class AgentSpec:
    """Everything needed to build an agent in another process: picklable, no live objects."""

    config: HydraConfig
    controller: str | None = None
    example_set: str | None = None

    def key(self) -> str:
        return json.dumps([self.config.model_dump(mode="json"), self.controller, self.example_set], sort_keys=True)

    def build(self) -> Any:
        from hydra_vr.factory import build_agent

        return build_agent(self.config, controller_checkpoint=self.controller, example_set=self.example_set)


def trace_name(sample_id: str) -> str:
    """A file name for a sample id: the id when it is safe, else a cleaned id plus a short hash."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", sample_id)[:80]
    if safe == sample_id and not safe.startswith("."):
        return f"{safe}.json"
    return f"{safe}-{hashlib.sha1(sample_id.encode()).hexdigest()[:8]}.json"


def _write_trace(trace_dir: Path, sample_id: str, data: dict[str, Any]) -> str:
    """Write atomically (tmp + rename) so a kill never leaves half a trace under the final name."""
    trace_dir.mkdir(parents=True, exist_ok=True)
    name = trace_name(sample_id)
    tmp = trace_dir / f".{name}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(data, default=str, ensure_ascii=False))
    os.replace(tmp, trace_dir / name)
    return f"{trace_dir.name}/{name}"  # relative to the run directory (the trace dir's parent)


def _ground_truth(sample: Sample) -> dict[str, Any]:
    gt: dict[str, Any] = {}
    if sample.answers:
        gt["answers"] = list(sample.answers)
    if sample.answer is not None:
        gt["answer"] = sample.answer
    if sample.choices is not None:
        gt["choices"] = list(sample.choices)
    if sample.correct_choice is not None:
        gt["correct_choice"] = sample.correct_choice
    if sample.box is not None:
        gt["box"] = [float(v) for v in sample.box]
    return gt


def sample_from_record(record: dict[str, Any]) -> Sample:
    """The sample a record was made from, as far as scoring needs it (the inverse of the record's
    ``id, task, query, image, gt, meta``); raises KeyError when the record has no ``gt``."""
    gt = record["gt"]
    box = gt.get("box")
    return Sample(
        id=str(record["id"]),
        image_path=Path(str(record.get("image", ""))),
        query=str(record.get("query", "")),
        task=record.get("task") or ("grounding" if box is not None and "answer" not in gt else "vqa"),
        answers=list(gt.get("answers") or []),
        answer=gt.get("answer"),
        choices=gt.get("choices"),
        correct_choice=gt.get("correct_choice"),
        box=tuple(float(v) for v in box) if box is not None else None,  # type: ignore[arg-type]
        meta=dict(record.get("meta") or {}),
    )


def score_fields(record: dict[str, Any], dataset: str) -> dict[str, Any]:
    """``metric, score, scores, choice`` of a stored record, scored again with the current scorer
    from its own prediction / boxes and ground truth (a crashed record scores as a wrong answer)."""
    sample = sample_from_record(record)
    if record.get("crashed"):
        return _scores_fields(score_sample(sample, "", [], dataset))
    return _scores_fields(score_sample(sample, record.get("prediction"), record.get("boxes") or [], dataset))


def _base_record(sample: Sample, dataset: str) -> dict[str, Any]:
    return {
        "id": sample.id,
        "dataset": canonical_name(dataset),
        "task": sample.task,
        "query": sample.query,
        "image": str(sample.image_path),
        "gt": _ground_truth(sample),
        "meta": {k: sample.meta[k] for k in _META_KEPT if k in sample.meta},
    }


def _scores_fields(scores: Scores) -> dict[str, Any]:
    return {"metric": scores.metric, "score": scores.score, "scores": scores.scores, "choice": scores.choice}


def error_record(sample: Sample, dataset: str, error: str, *, mode: str | None = None, seconds: float = 0.0) -> dict[str, Any]:
    """The record of a sample whose evaluation raised: every score present is 0, ``crashed`` set."""
    scores = score_sample(sample, "", [], dataset)  # a wrong answer: 0 wherever there is a ground truth
    return {
        **_base_record(sample, dataset), "mode": mode, "prediction": None, "boxes": [],
        **_scores_fields(scores), "steps": 0, "seconds": 0.0, "wall_seconds": seconds,
        "llm": {k: 0 for k in _LLM_KEPT}, "error": error, "crashed": True, "trace": None,
    }


def evaluate_sample(agent: Any, sample: Sample, dataset: str, trace_dir: Path | None = None) -> dict[str, Any]:
    """Run ``agent`` on ``sample`` and score it with ``dataset``'s official metric.

    Touches no file except the trace (``trace_dir/<id>.json``, when given). Never raises for a
    sample's own failure: an exception becomes an error record scoring 0.
    """
    t0 = time.perf_counter()
    mode = getattr(getattr(agent, "config", None), "mode", None)
    try:
        result = agent.run(str(sample.image_path), sample.query, sample.task, choices=sample.choices)
        answer = result.answer if sample.task == "vqa" else None
        boxes = [[float(v) for v in b] for b in result.boxes]
        scores = score_sample(sample, answer, boxes, dataset)
        trace = _write_trace(trace_dir, sample.id, result.to_dict()) if trace_dir is not None else None
    except Exception as exc:  # a missing image, a broken backend: one error record, not a crashed run
        log.debug("sample %s failed:\n%s", sample.id, traceback.format_exc())
        return error_record(sample, dataset, f"{type(exc).__name__}: {exc}", mode=mode, seconds=time.perf_counter() - t0)
    return {
        **_base_record(sample, dataset), "mode": result.mode, "prediction": answer, "boxes": boxes,
        **_scores_fields(scores), "steps": len(result.steps), "seconds": result.seconds,
        "wall_seconds": time.perf_counter() - t0,
        "llm": {k: (result.llm or {}).get(k, 0) for k in _LLM_KEPT}
        | ({"peak_prompt_tokens": result.llm["peak_prompt_tokens"]} if (result.llm or {}).get("peak_prompt_tokens") else {}),
        "error": result.error, "crashed": False, "trace": trace,
        "checks": sorted({f["check"] for f in result.checks}),
    }


# Per-process cache for evaluate_with_spec: one agent per worker process (pool or cluster node),
# built on first use. Only ever filled in the process that evaluates; the runner's own process
# passes a built agent to evaluate_sample instead.
_PROCESS_AGENT: dict[str, Any] = {}


def process_agent(spec: AgentSpec) -> Any:
    """This process's agent for ``spec`` (built once; a different spec replaces it)."""
    key = spec.key()
    if key not in _PROCESS_AGENT:
        for old in _PROCESS_AGENT.values():
            close_agent(old)
        _PROCESS_AGENT.clear()
        _PROCESS_AGENT[key] = spec.build()
    return _PROCESS_AGENT[key]


def close_agent(agent: Any) -> None:
    """Stop the agent's sandbox child (the models go with the process)."""
    close = getattr(getattr(agent, "runner", None), "close", None)
    if close is not None:
        close()


def evaluate_with_spec(spec: AgentSpec, sample: Sample, dataset: str, trace_dir: Path | None = None) -> dict[str, Any]:
    """:func:`evaluate_sample` with this process's agent for ``spec``; all arguments pickle.

    An agent that cannot be built (a model file missing on this node) raises: that is the run's
    failure, not the sample's, and must not leave error records that a resume would skip.
    """
    return evaluate_sample(process_agent(spec), sample, dataset, trace_dir)


__all__ = [
    "AgentSpec", "close_agent", "error_record", "evaluate_sample", "evaluate_with_spec", "process_agent", "sample_from_record",
    "score_fields", "trace_name",
]
