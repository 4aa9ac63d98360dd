"""Turn structured tool results and program variables into text, with fixed templates.

Templates follow the HYDRA appendix: one sentence per kind of result (find, exists, verify,
caption, simple query, depth, LLM answer, sort, middle, closest, farthest, variables). Tools
return dataclasses; only this module decides how they read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from hydra_vr.api.types import Answer, Detection, TextRegion, ToolCallRecord

TEMPLATES = {
    "find_some": "find({name!r}): {n} found: {items}",
    "find_none": "find({name!r}): no {name} found{why}",
    "standout": "standout(): {result}",
    "exists": "exists({name!r}): {verdict}",
    "verify": "verify_property({name!r}, {prop!r}): {verdict} ({evidence})",
    "caption": "caption: {text}",
    "simple_query": "simple_query({question!r}): {answer!r}",
    "depth": "compute_depth of the patch at {box}: {value:.2f} (larger = farther)",
    "focus": "is_blurry of {region}: {verdict} (fine detail {share:.0%} of the photo's sharpest part, whose edge energy is {detail:.1f})",
    "focus_none": "is_blurry of {region}: too little detail to measure",
    "llm_query": "llm_query({question!r}): {answer!r}",
    "best_text_match": "best_text_match({options}): {best!r}",
    "read_text": "read_text: {texts}",
    "classify": "classify: {labels}",
    "sorted": "{name} = patches sorted ({n}) at {boxes}",
    "middle": "{name} = the middle patch at {box}",
    "closest": "{name} = the closest patch at {box}",
    "farthest": "{name} = the farthest patch at {box}",
    "patch": "{name} = ImagePatch at {box}",
    "patches": "{name} = {n} patches at {boxes}",
    "bool": "{name} = {value}",
    "number": "{name} = {value}",
    "text": "{name} = {value}",
    "other": "{name} ({type}) = {value}",
    "final": "final_answer = {value}",
    "error": "the program failed ({kind}): {error}",
    "generic": "{tool}({args}): {result}",
}

_MAX_BOXES = 6


def _boxes(boxes: Sequence[Sequence[float]]) -> str:
    shown = ", ".join("[" + ", ".join(f"{v:.0f}" for v in b) + "]" for b in boxes[:_MAX_BOXES])
    more = len(boxes) - _MAX_BOXES
    return shown + (f" and {more} more" if more > 0 else "")


def _detections(dets: Sequence[Detection]) -> str:
    # The label says what was found ("vehicle" -> bus), the score how sure the detector was.
    def one(d: Detection) -> str:
        what = f"text {d.text!r}" if d.text else d.label
        return f"{what} {d.score:.2f} at {_boxes([d.box.to_list(0)])}"

    more = len(dets) - _MAX_BOXES
    return "; ".join(one(d) for d in dets[:_MAX_BOXES]) + (f"; and {more} more" if more > 0 else "")


def textualize_call(call: ToolCallRecord) -> str:
    """One line for one vision-tool call."""
    a, r = call.args, call.result
    if call.tool == "find":
        dets: list[Detection] = r or []
        if dets:
            line = TEMPLATES["find_some"].format(name=a["name"], n=len(dets), items=_detections(dets))
            # a box below the detector's threshold, for a thing presumed there: say so, it is a guess
            return f"{line} (presumed there: {call.meta['mapping']})" if call.meta.get("presumed") else line
        why = f" ({call.meta['mapping']})" if "not" in str(call.meta.get("mapping", "")) else ""
        return TEMPLATES["find_none"].format(name=a["name"], why=why)
    if call.tool == "standout":  # a stand-in, not a find: say what it measured
        found = f"{_detections(r)} ({call.meta.get('mapping', '')})" if r else "nothing stands out from the border"
        return TEMPLATES["standout"].format(result=found)
    if call.tool == "verify_property":
        return TEMPLATES["verify"].format(name=a["name"], prop=a["property"], verdict="yes" if r else "no", evidence=call.meta.get("evidence", ""))
    if call.tool == "simple_query":
        line = TEMPLATES["simple_query"].format(question=a["question"], answer=r.text if isinstance(r, Answer) else str(r))
        # a place read off boxes says which boxes, so a later step can check it
        if isinstance(r, Answer) and r.source == "place":
            return f"{line} (from the boxes: {r.evidence})"
        # the photo's light, its text's way up or its faces' smiles, measured, say what they measured, so a later step can weigh them
        return f"{line} ({r.evidence})" if isinstance(r, Answer) and r.source in ("light", "orientation", "expression") and r.evidence else line
    if call.tool == "compute_depth":
        return TEMPLATES["depth"].format(box=_boxes([a["box"]]), value=float(r))
    if call.tool == "focus":
        region = "the background" if a.get("background") else f"the patch at {_boxes([a['box']])}" if a.get("box") else "the whole photo"
        if r is None:
            return TEMPLATES["focus_none"].format(region=region)
        return TEMPLATES["focus"].format(region=region, verdict="blurry" if r.blurry else "sharp", share=r.share,
                                         detail=r.photo_detail or 0.0)
    if call.tool == "llm_query":
        return TEMPLATES["llm_query"].format(question=a["question"], answer=str(r)[:200])
    if call.tool == "best_text_match":
        line = TEMPLATES["best_text_match"].format(options=a["options"], best=r)
        # Colour matches carry which pixels were counted (object mask or centre-weighted patch).
        return f"{line} ({call.meta['evidence']})" if call.meta.get("evidence") else line
    if call.tool == "caption":
        return TEMPLATES["caption"].format(text=r)
    if call.tool == "read_text":
        regions: list[TextRegion] = r or []
        return TEMPLATES["read_text"].format(texts=" | ".join(t.text for t in regions) or "no text")
    if call.tool == "classify":
        return TEMPLATES["classify"].format(labels=", ".join(f"{ls.label} {ls.score:.2f}" for ls in r))
    # An operation without a template of its own still reads: name, arguments, result.
    args = ", ".join(f"{k}={v!r}" for k, v in a.items())
    return TEMPLATES["generic"].format(tool=call.tool, args=args, result=str(r)[:200])


def _variable_kind(name: str) -> str | None:
    lowered = name.lower()
    for key in ("sorted", "middle", "closest", "farthest"):
        if key in lowered:
            return key
    return None


def textualize_variable(var: dict[str, Any]) -> str:
    """One line for a variable reported by the sandbox (``VariableInfo.to_dict()``)."""
    name, typ, value = var["name"], var["type"], var["repr"]
    kind = _variable_kind(name)
    if var.get("box") is not None:
        box = _boxes([var["box"]])
        return TEMPLATES[kind if kind in ("middle", "closest", "farthest") else "patch"].format(name=name, box=box)
    if var.get("boxes") is not None:
        boxes = var["boxes"]
        key = "sorted" if kind == "sorted" else "patches"
        return TEMPLATES[key].format(name=name, n=len(boxes), boxes=_boxes(boxes) if boxes else "(none)")
    if typ == "bool":
        return TEMPLATES["bool"].format(name=name, value=value)
    if typ in ("int", "float"):
        return TEMPLATES["number"].format(name=name, value=value)
    if typ == "str":
        return TEMPLATES["text"].format(name=name, value=value)
    return TEMPLATES["other"].format(name=name, type=typ, value=value)


def textualize_step(result: Any, calls: Iterable[ToolCallRecord]) -> str:
    """Feedback text for one executed program: tool observations, then variables, then the answer.

    ``result`` is a sandbox ProgramResult (duck-typed: ok, error_kind, error, variables,
    has_final_answer, final_answer, stdout).
    """
    lines = [line for line in (textualize_call(c) for c in calls) if line]
    if not result.ok:
        lines.append(TEMPLATES["error"].format(kind=result.error_kind, error=result.error))
        return "\n".join(lines)
    for var in result.variables:
        d = var.to_dict() if hasattr(var, "to_dict") else var
        if d["name"] == "final_answer":
            continue
        lines.append(textualize_variable(d))
    if result.has_final_answer:
        fa = result.final_answer
        if isinstance(fa, dict) and fa.get("box") is not None:
            lines.append(TEMPLATES["final"].format(value=f"ImagePatch at {_boxes([fa['box']])}"))
        else:
            lines.append(TEMPLATES["final"].format(value=repr(fa)))
    if result.stdout.strip():
        lines.append("printed: " + result.stdout.strip()[:300])
    return "\n".join(lines) or "(the program ran but produced nothing new)"
