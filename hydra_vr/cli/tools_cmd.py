"""``hydra-vr tools IMAGE``: run individual vision tools and print structured results."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer

from hydra_vr.cli.common import CONFIG_OPTION, SET_OPTION, fail, load_cli_config, print_json


def tools(
    image: str = typer.Argument(..., help="Image file (JPEG, PNG, ...) or sample:NAME, a photo shipped by a package (sample:bus, sample:coffee, ...)."),
    find: list[str] = typer.Option(None, "--find", "-f", help="Object name to locate (repeatable)."),
    exists: list[str] = typer.Option(None, "--exists", help="Object name to check for (repeatable)."),
    verify: list[str] = typer.Option(None, "--verify", help="NAME:PROPERTY, e.g. bus:red (repeatable)."),
    query: list[str] = typer.Option(None, "--query", "-q", help="Question for simple_query (repeatable; needs the LLM in the offline profile)."),
    match: str = typer.Option(None, "--match", help="Comma-separated options for best_text_match, e.g. 'red,blue'."),
    ocr: bool = typer.Option(False, "--ocr", help="Read the text in the image."),
    classify: bool = typer.Option(False, "--classify", help="ImageNet labels of the whole image."),
    colors: bool = typer.Option(False, "--colors", help="Dominant colour names from pixels."),
    depth: bool = typer.Option(False, "--depth", help="Add relative depth (larger = farther) to each found object."),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON."),
    draw: Path = typer.Option(None, "--draw", help="Write the image with found boxes drawn to this PNG/JPEG."),
    config: str = CONFIG_OPTION,
    overrides: list[str] = SET_OPTION,
) -> None:
    """Run vision tools on IMAGE. Boxes are [x1, y1, x2, y2] pixels, origin at the top-left."""
    from hydra_vr.api import ImageLoadError, ImagePatch, bind_toolbox
    from hydra_vr.api.draw import draw_boxes
    from hydra_vr.api.types import Box
    from hydra_vr.assets import SampleImageError, resolve_image
    from hydra_vr.factory import build_toolbox

    cfg = load_cli_config(config, overrides)
    if not any([find, exists, verify, query, match, ocr, classify, colors]):
        fail("nothing to do: pass at least one of --find, --exists, --verify, --query, --match, --ocr, --classify, --colors")
    toolbox = build_toolbox(cfg)
    Patch = bind_toolbox(toolbox)
    try:
        root: ImagePatch = Patch(str(resolve_image(image)))
    except (ImageLoadError, SampleImageError) as exc:
        fail(str(exc))
    out: dict[str, Any] = {"image": str(image), "width": root.width, "height": root.height}
    drawn: list[tuple[Box, str]] = []
    t0 = time.perf_counter()
    try:
        if find:
            out["find"] = {}
            for name in find:
                patches = root.find(name)
                items = []
                for p in patches:
                    item = {"label": p.label, "score": round(p.score or 0.0, 4), "box": p.box}
                    if depth:
                        item["depth"] = round(p.compute_depth(), 4)
                    items.append(item)
                    drawn.append((p._box(), f"{p.label} {p.score:.2f}"))
                out["find"][name] = items
        if exists:
            out["exists"] = {name: root.exists(name) for name in exists}
        if verify:
            out["verify"] = {}
            for spec in verify:
                name, sep, prop = spec.partition(":")
                if not sep:
                    fail(f"--verify wants NAME:PROPERTY, got {spec!r}")
                targets = root.find(name) or [root]
                out["verify"][spec] = targets[0].verify_property(name, prop)
        if match:
            out["best_text_match"] = root.best_text_match([o.strip() for o in match.split(",")])
        if ocr:
            regions = toolbox.read_text(root.cropped_image)
            out["ocr"] = [r.to_dict() for r in regions]
            drawn.extend((r.box, r.text[:24]) for r in regions)
        if classify:
            out["classify"] = [ls.to_dict() for ls in toolbox.classify(root.cropped_image)]
        if colors:
            out["colors"] = [c.to_dict() for c in toolbox.colors(root.cropped_image)]
        if query:
            out["query"] = {q: root.simple_query(q) for q in query}
    except Exception as exc:  # a backend failed: say which, without a traceback
        fail(f"{type(exc).__name__}: {exc}", code=1)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    if draw is not None:
        draw_boxes(root.original_image, drawn, draw)
        out["drawn"] = str(draw)
    if as_json:
        print_json(out)
    else:
        _print_human(out)


def _print_human(out: dict[str, Any]) -> None:
    typer.echo(f"{out['image']} ({out['width']:.0f}x{out['height']:.0f})")
    for name, items in out.get("find", {}).items():
        typer.echo(f"find {name!r}: {len(items)} found")
        for it in items:
            extra = f" depth={it['depth']}" if "depth" in it else ""
            typer.echo(f"  {it['label']:<14} {it['score']:.2f}  box={it['box']}{extra}")
    for key in ("exists", "verify", "query"):
        for k, v in out.get(key, {}).items():
            typer.echo(f"{key} {k!r}: {v}")
    if "best_text_match" in out:
        typer.echo(f"best_text_match: {out['best_text_match']}")
    if "ocr" in out:
        typer.echo("ocr: " + (" | ".join(r["text"] for r in out["ocr"]) or "(no text)"))
    if "classify" in out:
        typer.echo("classify: " + ", ".join(f"{c['label']} {c['score']:.2f}" for c in out["classify"]))
    if "colors" in out:
        typer.echo("colors: " + ", ".join(f"{c['name']} {c['fraction']:.0%}" for c in out["colors"]))
    if "drawn" in out:
        typer.echo(f"drew boxes to {out['drawn']}")
    typer.echo(f"({out['seconds']} s)")
