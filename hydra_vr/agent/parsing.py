"""Robust parsing of LLM output: JSON planner replies and Python code blocks.

Small models wrap JSON in prose and code fences, cut lists short, or repeat themselves; each
function here takes what is usable and says what it dropped.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hydra_vr.agent.types import Option, PlannerOutput

_FENCE = re.compile(r"```(?:[a-zA-Z0-9_+-]*)\s*\n(.*?)(?:```|$)", re.S)


class ParseError(ValueError):
    pass


def _json_candidates(text: str) -> list[str]:
    cands = [m.group(1) for m in _FENCE.finditer(text)]
    start = text.find("{")
    if start >= 0:
        cands.append(text[start:])
    start_list = text.find("[")
    if start_list >= 0:
        cands.append(text[start_list:])
    return cands


def _load_prefix(text: str) -> Any:
    """json.loads of the first complete JSON value in ``text`` (ignores trailing prose)."""
    return json.JSONDecoder().raw_decode(text.strip())[0]


def _repair_truncated(text: str) -> Any:
    """Parse a JSON object cut off mid-list: keep the complete items (objects or ``[instruction, weight]`` pairs)."""
    items = re.findall(r"\{[^{}]*\"instruction\"[^{}]*\}", text, re.S)
    items += re.findall(r"\[\s*\"(?:[^\"\\]|\\.)*\"\s*,\s*-?[0-9.]+\s*\]", text)
    parsed = []
    for item in items:
        try:
            parsed.append(json.loads(item))
        except json.JSONDecodeError:
            continue
    if not parsed:
        raise ParseError("no complete instruction objects")
    return {"instructions": parsed}


def parse_planner_output(text: str, n: int) -> PlannerOutput:
    """Options (deduplicated, probabilities normalised to sum 1) from a planner reply."""
    notes: list[str] = []
    data: Any = None
    for cand in _json_candidates(text):
        try:
            data = _load_prefix(cand)
            break
        except (json.JSONDecodeError, ValueError):
            continue
    if data is None:
        try:
            data = _repair_truncated(text)
            notes.append("reply was cut off; kept the complete items")
        except ParseError:
            data = None
    direct = None
    if isinstance(data, dict):
        direct = data.get("answer") or data.get("final_answer")
        items = data.get("instructions") or data.get("options") or []
    elif isinstance(data, list):
        items = data
    else:
        # Last resort: numbered or bulleted lines of prose.
        items = [m.group(1).strip() for m in re.finditer(r"^\s*(?:\d+[.)]|[-*])\s+(.+)$", text, re.M)]
        if items:
            notes.append("no JSON; took numbered lines")
    options: list[Option] = []
    seen: set[str] = set()
    for item in items:
        if isinstance(item, str):
            instr, prob = item, None
        elif isinstance(item, list) and item:  # the compact reply: [instruction, weight]
            instr, prob = item[0], item[1] if len(item) > 1 else None
        elif isinstance(item, dict):
            instr = item.get("instruction") or item.get("step") or item.get("text")
            prob = item.get("probability", item.get("prob", item.get("p")))
        else:
            continue
        if not isinstance(instr, str) or not instr.strip():
            continue
        key = re.sub(r"\W+", " ", instr.lower()).strip()
        if key in seen:
            notes.append(f"dropped duplicate {instr!r}")
            continue
        seen.add(key)
        try:
            p = float(prob) if prob is not None else None
        except (TypeError, ValueError):
            p = None
        options.append(Option(instr.strip(), p if p is not None and p >= 0 else -1.0))
    options = options[:n]
    if options:
        known = [o.probability for o in options if o.probability >= 0]
        # An option without a probability ranks below every option that has one.
        fill = (0.5 * min(known) if known else 1.0) or 1e-3
        for o in options:
            if o.probability < 0:
                o.probability = fill
        total = sum(o.probability for o in options) or 1.0
        for o in options:
            o.probability = o.probability / total if total > 0 else 1.0 / len(options)
    if isinstance(direct, (int, float)):
        direct = str(direct)
    return PlannerOutput(options, direct_answer=direct if isinstance(direct, str) and direct.strip() else None, raw=text, parse_notes=notes)


def extract_code(text: str) -> str:
    """The Python program in a reasoner reply: the fenced block if any, else the text itself."""
    blocks = [m.group(1) for m in _FENCE.finditer(text)]
    code = max(blocks, key=len) if blocks else text
    # Drop a leading "python" tag line and stray fence lines that some models emit unbalanced.
    code = re.sub(r"^\s*python\s*\n", "", code)
    code = "\n".join(line for line in code.splitlines() if not line.strip().startswith("```"))
    return code.strip("\n")
