"""``hydra-vr ask`` and ``hydra-vr ground``: run the reasoning loop on one image."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from hydra_vr.cli.common import (
    CONFIG_OPTION, CONTROLLER_HELP, MODE_HELP, SET_OPTION, STRATEGY_HELP, fail, load_cli_config, loop_overrides, print_json,
)


def _run(task: str, image: str, query: str, config: str, overrides: list[str] | None, mode: str | None,
         controller: Path | None, examples: str | None, trace: Path | None, strategy: str | None = None) -> Any:
    from hydra_vr.agent.loop import AgentInputError
    from hydra_vr.agent.strategy import StrategyConfigError
    from hydra_vr.config import ConfigError
    from hydra_vr.api import ImageLoadError
    from hydra_vr.assets import SampleImageError, resolve_image
    from hydra_vr.factory import build_agent
    from hydra_vr.llm.base import LLMError
    from hydra_vr.controller.checkpoint import CheckpointError

    cfg = load_cli_config(config, loop_overrides(overrides, mode, controller, strategy))
    try:
        image_path = str(resolve_image(image))
        agent = build_agent(cfg, controller_checkpoint=str(controller) if controller else None, example_set=examples)
        result = agent.run(image_path, query, task=task)  # type: ignore[arg-type]
    except (AgentInputError, ImageLoadError, SampleImageError, LLMError, CheckpointError, StrategyConfigError, ConfigError) as exc:
        fail(str(exc))
    finally:
        if "agent" in locals() and hasattr(agent.runner, "close"):
            agent.runner.close()
    if trace is not None:
        trace.parent.mkdir(parents=True, exist_ok=True)
        trace.write_text(json.dumps(result.to_dict(), indent=2, default=str))
    return result


def print_trace(result: Any) -> None:
    """Every strategy's trace, readably: one block per step, indented by its depth in the hierarchy."""
    for s in result.steps:
        pad = "   " * s.depth
        role = f"[{s.role}] " if s.role not in ("step", result.strategy) else ""
        typer.echo(f"{pad}step {s.step}: {role}{s.action}")
        for key, value in s.extra.items():  # what only this strategy has, before the common fields
            if key in ("options", "choice", "replans", "note") or value in (None, "", [], {}):
                continue
            typer.echo(f"{pad}   {key}: " + str(value).replace("\n", f"\n{pad}      "))
        for i, o in enumerate(s.options):
            mark = "*" if i == s.choice else " "
            typer.echo(f"{pad}   {mark} {o.probability:.2f} {o.instruction}")
        for a in s.attempts:
            tag = "fallback " if a.fallback else ""
            status = "ok" if a.ok else f"{a.error_kind}: {a.error}"
            typer.echo(f"{pad}   {tag}program ({status}):")
            typer.echo(f"{pad}     " + a.code.replace("\n", f"\n{pad}     "))
        if s.code and not s.attempts:
            typer.echo(f"{pad}   code: " + s.code.replace("\n", f"\n{pad}         "))
        if s.observation:
            typer.echo(f"{pad}   -> " + s.observation.replace("\n", f"\n{pad}      "))
        if s.extra.get("note"):
            typer.echo(f"{pad}   note: {s.extra['note']}")
        typer.echo(f"{pad}   decision: {s.decision or '-'}  ({s.seconds.get('total', 0):.1f} s)")
    llm = result.llm or {}
    typer.echo(f"LLM: {llm.get('calls', 0):.0f} calls, {llm.get('prompt_tokens', 0):.0f} prompt + "
               f"{llm.get('completion_tokens', 0):.0f} generated tokens; {result.seconds:.1f} s total")


def ask(
    image: str = typer.Argument(..., help="Image file or sample:NAME."),
    question: str = typer.Argument(..., help="The question to answer."),
    as_json: bool = typer.Option(False, "--json", help="Print the answer and the whole trace as JSON."),
    trace: Path = typer.Option(None, "--trace", help="Write the trace (every step, code, result, timings, tokens) to this JSON file."),
    mode: str = typer.Option(None, "--mode", help=MODE_HELP),
    strategy: str = typer.Option(None, "--strategy", "-s", help=STRATEGY_HELP),
    controller: Path = typer.Option(None, "--controller", help=CONTROLLER_HELP),
    examples: str = typer.Option(None, "--examples", help="Few-shot example set: vqa (default), okvqa, grounding."),
    config: str = CONFIG_OPTION,
    overrides: list[str] = SET_OPTION,
) -> None:
    """Answer a QUESTION about IMAGE with the configured agent strategy (HYDRA's loop by default)."""
    result = _run("vqa", image, question, config, overrides, mode, controller, examples, trace, strategy)
    if as_json:
        print_json(result.to_dict())
    else:
        print_trace(result)
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
    strategy: str = typer.Option(None, "--strategy", "-s", help=STRATEGY_HELP),
    controller: Path = typer.Option(None, "--controller", help=CONTROLLER_HELP),
    config: str = CONFIG_OPTION,
    overrides: list[str] = SET_OPTION,
) -> None:
    """Ground EXPRESSION in IMAGE: print the box [x1, y1, x2, y2] (pixels, origin top-left)."""
    result = _run("grounding", image, expression, config, overrides, mode, controller, "grounding", trace, strategy)
    if draw is not None and result.boxes:
        from hydra_vr.api import load_image
        from hydra_vr.api.draw import draw_boxes
        from hydra_vr.api.types import Box

        draw_boxes(load_image(result.image), [(Box(*b), expression[:30]) for b in result.boxes], draw)
    if as_json:
        print_json(result.to_dict())
    else:
        print_trace(result)
        typer.echo(f"boxes: {result.boxes}" if result.boxes else f"no box: {result.error}")
    if not result.ok:
        raise typer.Exit(1)


def strategies() -> None:
    """List the agent strategies (`--strategy NAME`, or `agent.strategy` in a config) with their options."""
    from hydra_vr.agent.strategy import strategy_table

    for name, summary, defaults in strategy_table():
        typer.echo(f"{name:10s} {summary}")
        if defaults:
            typer.echo(" " * 11 + "options (agent." + name + "): " + ", ".join(f"{k}={v!r}" for k, v in defaults.items()))
