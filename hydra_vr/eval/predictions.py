"""Prediction files in the formats the official evaluators read, written from result records.

- GQA (``eval.py``): ``[{"questionId": str, "prediction": str}]``.
- OK-VQA (VQA API ``loadRes``): ``[{"question_id": int, "answer": str}]``.
- A-OKVQA (``eval_predictions.py``): ``predictions_{split}-da.json`` and ``-mc.json``, each
  ``{question_id: prediction}``, and the leaderboard's unified ``predictions_{split}.json``,
  ``{question_id: {"multiple_choice": str, "direct_answer": str}}``.
- RefCOCO family: ``[{"ref_id", "sent_id", "image_id", "box": [x1, y1, x2, y2] or null}]``.
- Anything else: ``[{"id", "prediction"}]`` / ``[{"id", "box"}]``.

A failed sample still gets an entry (empty answer, null box) so that strict evaluators, which
require every question, count it wrong instead of refusing the file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra_vr.eval.scoring import metric_family

PREDICTIONS_DIR = "predictions"


def _answer(record: dict[str, Any]) -> str:
    return record.get("prediction") or ""


def _box(record: dict[str, Any]) -> list[float] | None:
    boxes = record.get("boxes") or []
    return list(boxes[0]) if boxes else None


def _split(records: Sequence[dict[str, Any]], default: str) -> str:
    return str(records[0].get("meta", {}).get("split") or default)


def _qid(record: dict[str, Any]) -> Any:
    return record.get("meta", {}).get("question_id", record["id"])


def gqa_predictions(records: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    return [{"questionId": r["id"], "prediction": _answer(r)} for r in records]


def okvqa_predictions(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"question_id": int(_qid(r)), "answer": _answer(r)} for r in records]


def aokvqa_predictions(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """The unified file; ``multiple_choice`` is the choice the open answer maps to."""
    out: dict[str, dict[str, str]] = {}
    for r in records:
        choices = r.get("gt", {}).get("choices") or [""]
        out[str(_qid(r))] = {"multiple_choice": r.get("choice") or choices[0], "direct_answer": _answer(r)}
    return out


def grounding_predictions(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in records:
        meta = r.get("meta", {})
        out.append({"ref_id": meta.get("ref_id"), "sent_id": meta.get("sent_id", r["id"]),
                    "image_id": meta.get("image_id"), "box": _box(r)})
    return out


def generic_predictions(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": r["id"], "box": _box(r)} if r.get("task") == "grounding" else {"id": r["id"], "prediction": _answer(r)}
            for r in records]


def _dump(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return path


def write_prediction_files(records: Sequence[dict[str, Any]], run_dir: Path) -> list[Path]:
    """Write the official prediction file(s) for the records' dataset under ``run_dir/predictions``."""
    if not records:
        return []
    out = Path(run_dir) / PREDICTIONS_DIR
    dataset = str(records[0].get("dataset", ""))
    family = metric_family(dataset)
    if family == "gqa":
        return [_dump(out / f"{_split(records, 'testdev')}_predictions.json", gqa_predictions(records))]
    if family == "vqa":
        split = _split(records, "val")
        split = "val" if split == "test" else split  # OK-VQA "test" is val2014
        return [_dump(out / f"OpenEnded_mscoco_{split}2014_hydra_results.json", okvqa_predictions(records))]
    if family == "aokvqa":
        split = _split(records, "val")
        unified = aokvqa_predictions(records)
        return [
            _dump(out / f"predictions_{split}.json", unified),
            _dump(out / f"predictions_{split}-da.json", {q: p["direct_answer"] for q, p in unified.items()}),
            _dump(out / f"predictions_{split}-mc.json", {q: p["multiple_choice"] for q, p in unified.items()}),
        ]
    if family == "grounding":
        meta = records[0].get("meta", {})
        name = "_".join(str(p) for p in (dataset, meta.get("split_by"), meta.get("split")) if p)
        return [_dump(out / f"{name}_boxes.json", grounding_predictions(records))]
    return [_dump(out / f"{dataset or 'dataset'}_predictions.json", generic_predictions(records))]
