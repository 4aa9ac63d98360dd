"""Options and helpers shared by the CLI commands."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer
import yaml

from hydra_vr.config import ConfigError, HydraConfig, load_config

CONFIG_OPTION = typer.Option("default", "--config", "-c", help="Packaged profile name (default, hub, openai) or a YAML file.")
MODE_HELP = ("HYDRA's ablations: full (the RL controller: --controller CKPT, else the one the package ships), no_rl, one_step, no_sampling "
             "(vipergpt still works: it means --strategy vipergpt). Default: the config's.")
STRATEGY_HELP = "Agent strategy: hydra, vipergpt, ... (`hydra-vr strategies` lists them). Default: the config's (hydra)."
CONTROLLER_HELP = ("A trained controller checkpoint (hydra-vr train-controller or export-controller); implies mode full. "
                   "Without it, mode full uses the checkpoint the package ships, if any.")
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


def loop_overrides(overrides: list[str] | None, mode: str | None = None, controller: object | None = None,
                   strategy: str | None = None) -> list[str]:
    """The --set overrides plus what --mode / --controller / --strategy imply (a checkpoint needs the full loop)."""
    sets = list(overrides or [])
    if mode:
        sets.append(f"agent.mode={mode}")
    elif controller:
        sets.append("agent.mode=full")
    if strategy:
        sets.append(f"agent.strategy={strategy}")
    return sets


def parse_loader_options(items: list[str] | None) -> dict[str, Any]:
    """``--option name=value`` pairs for a dataset loader; values parsed as YAML (numbers, booleans)."""
    options: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            fail(f"--option {item!r} must look like name=value, e.g. coco_root=/data/coco")
        options[key.strip()] = yaml.safe_load(raw)
    return options


def default_examples(dataset: str) -> str | None:
    """Knowledge questions get the okvqa few-shot set; other datasets use the task's default set."""
    return "okvqa" if dataset in ("okvqa", "aokvqa") else None
