"""Options and helpers shared by the CLI commands."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer

from hydra_vr.config import ConfigError, HydraConfig, load_config

CONFIG_OPTION = typer.Option("default", "--config", "-c", help="Packaged profile name (default, hub, openai) or a YAML file.")
SET_OPTION = typer.Option(None, "--set", help="Override a config field, e.g. --set vision.detector.options.score_threshold=0.3 (repeatable).")


def load_cli_config(config: str, overrides: list[str] | None) -> HydraConfig:
    try:
        return load_config(config, overrides or [])
    except ConfigError as exc:
        fail(str(exc))
        raise  # unreachable: fail() exits


def fail(message: str, code: int = 2) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")
