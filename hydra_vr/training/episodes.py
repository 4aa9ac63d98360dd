"""Recorded episodes: the JSONL format that training replays without LLM, tool or embedder calls.

One episode per line, ``{"format": "hydra-vr-episode", "version": 1, ...}``::

    id, dataset, image, query, task          the sample
    gt: {answers, answer, choices, correct_choice, box}   the sample's ground truth (what exists)
    embedding: {name, dim}                   the embedder the vectors came from
    num_options, max_steps, max_replans      the loop's N and bounds when recorded
    explore: "all" | "chosen"                which options were executed at each step
    query_vec                                vector (see below)
    steps: [                                 one per executed step, in order
      {step: t,                              1-based step index
       memory, memory_vec,                   rendered state memory before the step (and its embedded tail)
       rounds: [                             planner rounds at this step; all but the last were REPLANs
         {options: [{instruction, probability, vec}], choice: i | -1 (REPLAN)}],
       outcomes: [                           one per option of the LAST round
         {recorded: bool,                    false: not executed (explore "chosen")
          feedback, ok,                      textualized result and program success
          decision: "answer" | "continue" | null,
          answer, boxes,                     the output it gave (summarizer answer / program guess, boxes)
          metric: float | null,              metric of that output against gt
          final: bool}]}]                    the episode ended after this option (its metric is the episode's)
    result: {answer, boxes, metric, steps, error, seconds}

Metrics are :func:`hydra_vr.training.reward.reward_metric`: the benchmark's answer score, or IoU.
Files are written with :class:`hydra_vr.eval.store.ResultsFile` (one fsynced line per episode,
a cut-off last line dropped on resume), as ``hydra-vr eval`` writes its results. Readers also take
``.jsonl.gz`` (a finished set kept in git is about 40% of its text).

Vectors are float16, little-endian, base64 (``"f16:"`` prefix): 384 numbers take 1 KiB of text,
so an N = 5 step costs ~7 KiB and replay needs neither the embedder nor a side file. The texts
stay next to them so a set can be re-embedded for another embedding model.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


FORMAT = "hydra-vr-episode"
VERSION = 1
REPLAN_CHOICE = -1


class EpisodeFormatError(ValueError):
    """A recorded-episode file or line does not have the documented format."""


def encode_vector(vec: np.ndarray) -> str:
    return "f16:" + base64.b64encode(np.asarray(vec, dtype="<f2").tobytes()).decode("ascii")


def decode_vector(text: str) -> np.ndarray:
    if not isinstance(text, str) or not text.startswith("f16:"):
        raise EpisodeFormatError(f"vector must be an 'f16:' base64 string, got {str(text)[:30]!r}")
    return np.frombuffer(base64.b64decode(text[4:]), dtype="<f2").astype(np.float32)


@dataclass
class OptionOutcome:
    recorded: bool = False
    feedback: str = ""
    ok: bool = False
    decision: str | None = None
    answer: str | None = None
    boxes: list[list[float]] = field(default_factory=list)
    metric: float | None = None
    final: bool = False


@dataclass
class RecordedOption:
    instruction: str
    probability: float
    vec: np.ndarray


@dataclass
class RecordedRound:
    options: list[RecordedOption]
    choice: int  # option index, or REPLAN_CHOICE

    @property
    def probabilities(self) -> list[float]:
        return [o.probability for o in self.options]

    @property
    def option_vecs(self) -> np.ndarray:
        return np.stack([o.vec for o in self.options]) if self.options else np.zeros((0, 0), dtype=np.float32)


@dataclass
class RecordedStep:
    step: int
    memory: str
    memory_vec: np.ndarray
    rounds: list[RecordedRound]
    outcomes: list[OptionOutcome]

    @property
    def executed(self) -> RecordedRound:
        return self.rounds[-1]


@dataclass
class RecordedEpisode:
    id: str
    query: str
    task: str
    gt: dict[str, Any]  # the sample's ground truth (answers / answer / choices / box), for reference
    embedding_name: str
    embedding_dim: int
    num_options: int
    max_steps: int
    max_replans: int
    query_vec: np.ndarray
    steps: list[RecordedStep]
    result: dict[str, Any] = field(default_factory=dict)
    dataset: str = ""
    image: str = ""
    explore: str = "all"

    # ------------------------------------------------------------------ json
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "version": VERSION, "id": self.id, "dataset": self.dataset, "image": self.image,
            "query": self.query, "task": self.task, "gt": self.gt,
            "embedding": {"name": self.embedding_name, "dim": self.embedding_dim},
            "num_options": self.num_options, "max_steps": self.max_steps, "max_replans": self.max_replans,
            "explore": self.explore, "query_vec": encode_vector(self.query_vec),
            "steps": [{
                "step": s.step, "memory": s.memory, "memory_vec": encode_vector(s.memory_vec),
                "rounds": [{"options": [{"instruction": o.instruction, "probability": o.probability, "vec": encode_vector(o.vec)}
                                        for o in r.options], "choice": r.choice} for r in s.rounds],
                "outcomes": [vars(o) for o in s.outcomes],
            } for s in self.steps],
            "result": self.result,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RecordedEpisode:
        if data.get("format") != FORMAT:
            raise EpisodeFormatError(f"not a recorded episode (format {data.get('format')!r}, expected {FORMAT!r})")
        if data.get("version") != VERSION:
            raise EpisodeFormatError(f"episode format version {data.get('version')!r} is not supported (this code reads {VERSION})")
        try:
            steps = [RecordedStep(
                step=int(s["step"]), memory=s["memory"], memory_vec=decode_vector(s["memory_vec"]),
                rounds=[RecordedRound([RecordedOption(o["instruction"], float(o["probability"]), decode_vector(o["vec"]))
                                       for o in r["options"]], int(r["choice"])) for r in s["rounds"]],
                outcomes=[OptionOutcome(**o) for o in s["outcomes"]],
            ) for s in data["steps"]]
            return cls(
                id=str(data["id"]), query=data["query"], task=data["task"], gt=dict(data.get("gt") or {}),
                embedding_name=data["embedding"]["name"], embedding_dim=int(data["embedding"]["dim"]),
                num_options=int(data["num_options"]), max_steps=int(data["max_steps"]), max_replans=int(data["max_replans"]),
                query_vec=decode_vector(data["query_vec"]), steps=steps, result=data.get("result") or {},
                dataset=data.get("dataset", ""), image=data.get("image", ""), explore=data.get("explore", "all"),
            )
        except (KeyError, TypeError) as exc:
            raise EpisodeFormatError(f"episode {data.get('id')!r}: missing or bad field: {exc}") from exc


def iter_episodes(path: Path | str) -> Iterator[RecordedEpisode]:
    """Episodes of a JSONL file, or a gzip-compressed one (``.gz``: how a set is kept in git); a truncated
    last line (an interrupted recording) is skipped."""
    path = Path(path)
    if not path.is_file():
        raise EpisodeFormatError(f"episode file not found: {path}")
    try:
        text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise EpisodeFormatError(f"{path}: not a readable episode file: {exc}") from exc
    lines = text.splitlines()
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            if i == len(lines):
                continue
            raise EpisodeFormatError(f"{path}:{i}: not JSON: {exc}") from exc
        try:
            yield RecordedEpisode.from_dict(data)
        except EpisodeFormatError as exc:
            raise EpisodeFormatError(f"{path}:{i}: {exc}") from exc


def load_episodes(paths: Iterable[Path | str]) -> list[RecordedEpisode]:
    """Episodes of several files; all must share one embedding model and N (else a clear error)."""
    episodes = [ep for p in paths for ep in iter_episodes(p)]
    kinds = {(ep.embedding_name, ep.embedding_dim, ep.num_options) for ep in episodes}
    if len(kinds) > 1:
        raise EpisodeFormatError(f"episodes mix embedding models / option counts: {sorted(kinds)}; train on one kind at a time")
    return episodes
