"""``hydra-vr eval``: run the loop over a benchmark into a resumable run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from hydra_vr.cli.common import (
    CONFIG_OPTION, CONTROLLER_HELP, MODE_HELP, SET_OPTION, STRATEGY_HELP, default_examples, fail, load_cli_config, loop_overrides,
    parse_loader_options,
)
from hydra_vr.cli.ray_options import (
    RAY_CPUS_OPTION, RAY_GPUS_OPTION, RAY_MEMORY_OPTION, RAY_OPTION, RAY_RESOURCE_OPTION, RAY_TRIES_OPTION, ray_settings,
)

EVAL_HELP = (  # one paragraph per line: the help renderer re-wraps lines, it does not join them
    "Evaluate the loop on a benchmark: one JSON line per finished sample in RUN_DIR/results.jsonl.\n\n"
    "Rerunning the same command resumes: finished samples are skipped, a cut-off last line is redone. "
    "At the end RUN_DIR holds report.json and report.md (scores x100, per-type breakdowns, cost), "
    "predictions/ in each official evaluator's format, and traces/ (one JSON trace per sample).\n\n"
    "Datasets: gqa, okvqa, aokvqa, refcoco, refcoco+, refcocog (also -google / -umd / -unc), "
    "user (a .jsonl or .csv file), easy-vqa (ships with its package: no --data-root needed).\n\n"
    "Ablations: the same command with --mode full|no_rl|one_step|no_sampling|vipergpt and one --out per "
    "mode gives reports with the same columns.\n\n"
    "Example: hydra-vr eval --dataset gqa --data-root /data/gqa --limit 500 --workers 2 --out runs/gqa-no_rl\n\n"
    "On a Ray cluster: the same command with --ray auto (or HOST:PORT) --workers N; the run directory, "
    "resume and report are those of a local run."
)


def _check_agent_config(cfg: Any, controller: Path | None) -> str | None:
    """Refuse an unknown strategy, bad strategy options, or mode full without a checkpoint before any sample runs;
    return the checkpoint the run uses (``--controller``, else in mode full the one the package ships)."""
    from hydra_vr.agent.strategy import StrategyConfigError, build_strategy, check_sections
    from hydra_vr.config import ConfigError
    from hydra_vr.factory import controller_checkpoint

    try:
        check_sections(dict(cfg.agent.model_extra or {}))
        build_strategy(cfg.agent.strategy_name, cfg.agent.strategy_options())
    except StrategyConfigError as exc:
        fail(str(exc))
    try:
        return controller_checkpoint(cfg, str(controller) if controller else None)
    except ConfigError as exc:
        fail(str(exc))
        raise  # unreachable: fail() exits


def _print_summary(report: dict[str, Any], run_dir: Path) -> None:
    cost = report["cost"]
    score = "-" if report["score"] is None else f"{report['score']:.2f}"
    typer.echo(f"{report['dataset']} ({report.get('split') or 'default split'}, mode {report.get('mode')}): "
               f"n={report['n']}, errors={report['errors']}, {report['main_metric']}={score}; "
               f"mean {cost['mean_steps']:.2f} steps, {cost['mean_seconds']:.2f} s, {cost['mean_tokens']:.0f} tokens per sample")
    for name, value in report.get("grounding", {}).items():
        if name != "n":
            typer.echo(f"  {name}: {value}")
    typer.echo(f"report: {run_dir / 'report.md'}")


def eval_command(
    out: Path = typer.Option(..., "--out", "-o", help="Run directory (created; rerun with the same one to resume)."),
    dataset: str = typer.Option(None, "--dataset", "-d", help="Benchmark name (gqa, okvqa, aokvqa, refcoco, user, easy-vqa, ...)."),
    data_root: Path = typer.Option(None, "--data-root", help="Folder with the benchmark's files (a file for 'user')."),
    split: str = typer.Option(None, "--split", help="Split; default: the benchmark's usual test split."),
    limit: int = typer.Option(None, "--limit", min=0, help="Only the first N samples."),
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="Samples run in parallel, each worker a process (a Ray actor with --ray) with its own models."),
    mode: str = typer.Option(None, "--mode", help=MODE_HELP),
    strategy: str = typer.Option(None, "--strategy", "-s", help=STRATEGY_HELP),
    controller: Path = typer.Option(None, "--controller", help=CONTROLLER_HELP),
    examples: str = typer.Option(None, "--examples", help="Few-shot example set (vqa, okvqa, grounding); default by dataset."),
    options: list[str] = typer.Option(None, "--option", help="Dataset loader option name=value, e.g. coco_root=/data/coco, version=all, split_by=google (repeatable)."),
    report_only: bool = typer.Option(False, "--report-only", help="Re-score RUN_DIR/results.jsonl with the current scorer and rebuild the report and prediction files; run nothing."),
    force: bool = typer.Option(False, "--force", help="Resume even though RUN_DIR was started with other settings."),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="Also redo samples whose evaluation raised (crashed records)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar with ETA and the running score."),
    config: str = CONFIG_OPTION,
    overrides: list[str] = SET_OPTION,
    ray: str = RAY_OPTION,
    ray_cpus: float = RAY_CPUS_OPTION,
    ray_gpus: float = RAY_GPUS_OPTION,
    ray_memory_mb: int = RAY_MEMORY_OPTION,
    ray_resources: list[str] = RAY_RESOURCE_OPTION,
    max_tries: int = RAY_TRIES_OPTION,
) -> None:
    from hydra_vr.datasets import DatasetError, check_images, load_dataset
    from hydra_vr.datasets.loading import canonical_name
    from hydra_vr.eval.report import write_report
    from hydra_vr.eval.runner import EvalError, EvalSettings, RunDirError, run_eval
    from hydra_vr.eval.sample_eval import AgentSpec
    from hydra_vr.eval.store import RESULTS
    from hydra_vr.llm.base import LLMError
    from hydra_vr.registry import UnknownComponentError
    from hydra_vr.scale import ClusterError

    if report_only:
        from hydra_vr.eval.rescore import rescore_run

        if not (out / RESULTS).is_file():
            fail(f"{out / RESULTS} does not exist: nothing to report")
        try:
            rescored = rescore_run(out)  # stored predictions, current scorer
        except RunDirError as exc:
            fail(str(exc))
        if rescored.changed:
            typer.echo(f"re-scored {rescored.changed} record(s) with the current scorer")
        _print_summary(write_report(out, rescored.records), out)
        return
    if not dataset:
        fail("--dataset is required (unless --report-only)")
    loader_options = parse_loader_options(options)
    cluster = ray_settings(ray, workers, ray_cpus, ray_gpus, ray_memory_mb, ray_resources, max_tries)
    cfg = load_cli_config(config, loop_overrides(overrides, mode, controller, strategy))
    checkpoint = _check_agent_config(cfg, controller)
    try:
        samples = load_dataset(dataset, data_root, split, limit, **loader_options)
        missing = check_images(samples)
        if samples and len(missing) == len({s.image_path for s in samples}):
            raise DatasetError(f"none of the {len(missing)} image file(s) exist, e.g. {missing[0]} "
                               "(check --data-root, or --option coco_root=... / image_dir=...)")
    except (DatasetError, UnknownComponentError) as exc:
        fail(str(exc))
    except TypeError as exc:  # an --option the loader does not take
        fail(f"dataset {dataset!r}: {exc}")
    if not samples:  # an empty file or --limit 0: say so instead of writing an empty report
        fail(f"dataset {dataset!r} selects no samples (an empty file, or --limit 0): nothing to evaluate")
    if missing:
        typer.secho(f"warning: {len(missing)} image file(s) missing (e.g. {missing[0]}): those samples will be errors",
                    fg=typer.colors.YELLOW, err=True)
    key = canonical_name(dataset)
    example_set = examples or default_examples(key)
    settings = EvalSettings(
        dataset=key, data_root=str(data_root.expanduser().resolve()) if data_root else None, split=split, limit=limit,
        mode=cfg.agent.mode, config=config, controller=checkpoint, examples=example_set,
        overrides=tuple(overrides or []), options=loader_options,
        strategy=None if cfg.agent.strategy_name == "hydra" else cfg.agent.strategy_name,
    )
    spec = AgentSpec(cfg, controller=checkpoint, example_set=example_set)
    if checkpoint:  # refuse a bad checkpoint now, not as one error record per sample
        from hydra_vr.factory import build_controller
        from hydra_vr.controller.checkpoint import CheckpointError

        try:
            build_controller(cfg, checkpoint)
        except CheckpointError as exc:
            fail(str(exc))
    try:
        outcome = run_eval(samples, out, settings, agent_spec=spec, workers=workers, force=force,
                           retry_errors=retry_errors, progress=progress, ray=cluster)
    except RunDirError as exc:
        fail(str(exc))
    except ClusterError as exc:  # cannot join, no room for an actor, a worker cannot build the agent
        fail(f"{exc} (finished samples are saved in {out / RESULTS}; rerun to resume)", code=3)
    except (EvalError, LLMError) as exc:
        fail(f"{exc} (finished samples are saved in {out / RESULTS}; rerun to resume)", code=1)
    except KeyboardInterrupt:
        typer.secho(f"interrupted: finished samples are saved in {out / RESULTS}; rerun the same command to resume",
                    fg=typer.colors.YELLOW, err=True)
        raise typer.Exit(130) from None
    typer.echo(f"{outcome.total} samples: {outcome.already_done} done before, {outcome.evaluated} evaluated now"
               + (f", {outcome.dropped_lines} unusable line(s) dropped and redone" if outcome.dropped_lines else "")
               + f" ({outcome.seconds:.1f} s)")
    _print_summary(outcome.report, out)
