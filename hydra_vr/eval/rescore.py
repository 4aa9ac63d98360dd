"""Score stored predictions again with the current scorer, from the ground truth each record keeps.

A run made with older code (a user file scored as if its alternatives were ten VQA annotators,
say) is brought up to date without running the loop: ``hydra-vr eval --report-only`` re-scores
``results.jsonl`` in place before building the report, and ``hydra-vr compare`` re-scores in memory.
Records without a ``gt`` (nothing to score against) are kept as stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra_vr.eval.sample_eval import score_fields
from hydra_vr.eval.store import RESULTS, ResultsFile, RunLock, read_run_file

Record = dict[str, Any]


@dataclass
class RescoreOutcome:
    records: list[Record] = field(default_factory=list)
    changed: int = 0  # records whose metric, score, scores or choice differ from the stored ones
    skipped: int = 0  # records without ground truth, kept as they were


def rescore_records(records: Sequence[Record], dataset: str | None = None) -> RescoreOutcome:
    """New records with current scores; ``dataset`` stands in for records that do not name theirs."""
    out = RescoreOutcome()
    for record in records:
        if not isinstance(record.get("gt"), dict):
            out.records.append(record)
            out.skipped += 1
            continue
        fields = score_fields(record, str(record.get("dataset") or dataset or ""))
        if any(record.get(k) != v for k, v in fields.items()):
            out.changed += 1
        out.records.append({**record, **fields})
    return out


def run_dataset(run_dir: Path) -> str | None:
    """The dataset ``run.json`` names, for records too old to carry their own."""
    return ((read_run_file(run_dir) or {}).get("settings") or {}).get("dataset")


def rescore_run(run_dir: Path) -> RescoreOutcome:
    """Re-score ``RUN_DIR/results.jsonl`` and rewrite it (atomically) when any score changed.

    Takes the run's lock, so it refuses (RunDirError) while an eval is writing to the directory.
    """
    run_dir = Path(run_dir)
    with RunLock(run_dir), ResultsFile(run_dir / RESULTS) as store:
        outcome = rescore_records(store.load().records, run_dataset(run_dir))
        if outcome.changed:
            store.rewrite(outcome.records)
    return outcome
