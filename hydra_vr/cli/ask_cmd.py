"""``hydra-vr ask`` and ``hydra-vr ground``: run the reasoning loop on one image."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from hydra_vr.cli.common import (
    CONFIG_OPTION, CONTROLLER_HELP, MODE_HELP, SET_OPTION, fail, load_cli_config, loop_overrides, print_json,
)


def _run(task: str, image: str, query: str, config: str, overrides: list[str] | None, mode: str | None,
         controller: Path | None, examples: str | None, trace: Path | None) -> Any:
    from hydra_vr.agent.loop import AgentInputError
    from hydra_vr.api import ImageLoadError
    from hydra_vr.assets import SampleImageError, resolve_image
    from hydra_vr.factory import build_agent
    from hydra_vr.llm.base import LLMError
    from hydra_vr.controller.checkpoint import CheckpointError

    cfg = load_cli_config(config, loop_overrides(overrides, mode, controller))
    try:
        image_path = str(resolve_image(image))
        agent = build_agent(cfg, controller_checkpoint=str(controller) if controller else None, example_set=examples)
        result = agent.run(image_path, query, task=task)  # type: ignore[arg-type]
    except (AgentInputError, ImageLoadError, SampleImageError, LLMError, CheckpointError) as exc:
        fail(str(exc))
    finally:
        if "agent" in locals() and hasattr(agent.runner, "close"):
            agent.runner.close()
    if trace is not None:
        trace.parent.mkdir(parents=True, exist_ok=True)
        trace.write_text(json.dumps(result.to_dict(), indent=2, default=str))
    return result


def _print_steps(result: Any) -> None:
    for s in result.steps:
        typer.echo(f"step {s.step}: {s.instruction}")
        if s.options:
            for i, o in enumerate(s.options):
                mark = "*" if i == s.choice else " "
                typer.echo(f"   {mark} {o.probability:.2f} {o.instruction}")
        for a in s.attempts:
            tag = "fallback " if a.fallback else ""
            status = "ok" if a.ok else f"{a.error_kind}: {a.error}"
            typer.echo(f"   {tag}program ({status}):")
            typer.echo("     " + a.code.replace("\n", "\n     "))
        typer.echo("   -> " + s.feedback.replace("\n", "\n      "))
        typer.echo(f"   decision: {s.decision}  ({s.seconds.get('total', 0):.1f} s)")
    llm = result.llm or {}
    typer.echo(f"LLM: {llm.get('calls', 0):.0f} calls, {llm.get('prompt_tokens', 0):.0f} prompt + "
               f"{llm.get('completion_tokens', 0):.0f} generated tokens; {result.seconds:.1f} s total")


def ask(
    image: str = typer.Argument(..., help="Image file or sample:NAME."),
    question: str = typer.Argument(..., help="The question to answer."),
    as_json: bool = typer.Option(False, "--json", help="Print the answer and the whole trace as JSON."),
    trace: Path = typer.Option(None, "--trace", help="Write the trace (every step, code, result, timings, tokens) to this JSON file."),
    mode: str = typer.Option(None, "--mode", help=MODE_HELP),
    controller: Path = typer.Option(None, "--controller", help=CONTROLLER_HELP),
    examples: str = typer.Option(None, "--examples", help="Few-shot example set: vqa (default), okvqa, grounding."),
    config: str = CONFIG_OPTION,
    overrides: list[str] = SET_OPTION,
) -> None:
    """Answer a QUESTION about IMAGE with the planner / controller / reasoner loop."""
    result = _run("vqa", image, question, config, overrides, mode, controller, examples, trace)
    if as_json:
        print_json(result.to_dict())
    else:
        _print_steps(result)
        typer.echo(f"answer: {result.answer}" if result.ok else f"failed: {result.error}")
    if not result.ok:
        raise typer.Exit(1)


def ground(
    image: str = typer.Argument(..., help="Image file or sample:NAME."),
    expression: str = typer.Argument(..., help="The referring expression, e.g. 'man on the left'."),
    as_json: bool = typer.Option(False, "--json", help="Print the boxes and the whole trace as JSON."),
    draw: Path = typer.Option(None, "--draw", help="Write the image with the box drawn to this file."),
    trace: Path = typer.Option(None, "--trace", help="Write the trace to this JSON file."),
    mode: str = typer.Option(None, "--mode", help=MODE_HELP),
    controller: Path = typer.Option(None, "--controller", help=CONTROLLER_HELP),
    config: str = CONFIG_OPTION,
    overrides: list[str] = SET_OPTION,
) -> None:
    """Ground EXPRESSION in IMAGE: print the box [x1, y1, x2, y2] (pixels, origin top-left)."""
    result = _run("grounding", image, expression, config, overrides, mode, controller, "grounding", trace)
    if draw is not None and result.boxes:
        from hydra_vr.api import load_image
        from hydra_vr.api.draw import draw_boxes
        from hydra_vr.api.types import Box

        draw_boxes(load_image(result.image), [(Box(*b), expression[:30]) for b in result.boxes], draw)
    if as_json:
        print_json(result.to_dict())
    else:
        _print_steps(result)
        typer.echo(f"boxes: {result.boxes}" if result.boxes else f"no box: {result.error}")
    if not result.ok:
        raise typer.Exit(1)
