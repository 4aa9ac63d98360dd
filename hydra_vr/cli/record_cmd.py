"""``hydra-vr record``: run the loop over a benchmark and record episodes for controller training."""

from __future__ import annotations

from pathlib import Path

import typer

from hydra_vr.cli.common import (
    CONFIG_OPTION, SET_OPTION, default_examples, fail, load_cli_config, loop_overrides,
    parse_loader_options,
)

RECORD_HELP = (
    "Run the loop over a benchmark and record one episode per sample in EPISODES (JSONL) for "
    "hydra-vr train-controller: each step's options, probabilities, memory, their embeddings, and what "
    "executing each option produced, scored against the ground truth.\n\n"
    "--explore all executes every option at every step on a side sandbox (N programs per step); "
    "--explore chosen only the one the policy picked. Rerunning the same command resumes: recorded "
    "samples are skipped, a cut-off last line is redone.\n\n"
    "Example: hydra-vr record --dataset gqa --data-root /data/gqa --limit 300 --out episodes/gqa.jsonl"
)


def record_command(
    out: Path = typer.Option(..., "--out", "-o", help="Episode file (JSONL), appended to; rerun to resume."),
    dataset: str = typer.Option(..., "--dataset", "-d", help="Benchmark name (gqa, okvqa, aokvqa, refcoco, user, easy-vqa, ...)."),
    data_root: Path = typer.Option(None, "--data-root", help="Folder with the benchmark's files (a file for 'user')."),
    split: str = typer.Option(None, "--split", help="Split; default: the benchmark's usual split."),
    limit: int = typer.Option(None, "--limit", min=0, help="Only the first N samples."),
    explore: str = typer.Option("all", "--explore", help="all: execute every option at each step; chosen: only the chosen one."),
    epsilon: float = typer.Option(0.1, "--epsilon", min=0.0, max=1.0, help="Probability of a random option or REPLAN instead of the policy's."),
    controller: Path = typer.Option(None, "--controller", help="Record with this trained controller instead of the planner's probabilities."),
    examples: str = typer.Option(None, "--examples", help="Few-shot example set (vqa, okvqa, grounding); default by dataset."),
    options: list[str] = typer.Option(None, "--option", help="Dataset loader option name=value (repeatable)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the epsilon choices."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
    config: str = CONFIG_OPTION,
    overrides: list[str] = SET_OPTION,
) -> None:
    from hydra_vr.controller.observation import ObservationEncoder
    from hydra_vr.datasets import DatasetError, load_dataset
    from hydra_vr.datasets.loading import canonical_name
    from hydra_vr.eval.store import ResultsFile
    from hydra_vr.factory import build_agent
    from hydra_vr.llm import build_embedder
    from hydra_vr.llm.base import LLMError
    from hydra_vr.registry import UnknownComponentError
    from hydra_vr.sandbox import Sandbox
    from hydra_vr.training.recorder import EXPLORE_MODES, EpisodeRecorder
    from hydra_vr.training.settings import load_training_config

    if explore not in EXPLORE_MODES:
        fail(f"--explore must be one of {', '.join(EXPLORE_MODES)}")
    cfg = load_cli_config(config, loop_overrides(overrides, None, controller))
    if cfg.agent.mode in ("one_step", "vipergpt", "no_sampling"):
        fail(f"mode {cfg.agent.mode} makes no controller decisions to record; use no_rl or full")
    try:
        samples = load_dataset(dataset, data_root, split, limit, **parse_loader_options(options))
    except (DatasetError, UnknownComponentError, TypeError) as exc:
        fail(str(exc))
    key = canonical_name(dataset)
    store = ResultsFile(out)
    done = store.repair().ids
    pending = [s for s in samples if s.id not in done]
    typer.echo(f"{len(samples)} samples: {len(samples) - len(pending)} recorded before, {len(pending)} to record")
    if not pending:
        return
    memory_chars = load_training_config().observation.memory_chars
    agent = build_agent(cfg, controller_checkpoint=str(controller) if controller else None,
                        example_set=examples or default_examples(key))
    encoder = ObservationEncoder(build_embedder(cfg.embedding, cfg.cache_path), cfg.agent.num_options, memory_chars)
    side = Sandbox(agent.toolbox, config=cfg.sandbox) if explore == "all" else None
    recorder = EpisodeRecorder(agent, encoder, explore=explore, side_runner=side, epsilon=epsilon, seed=seed)
    from rich.progress import Progress

    try:
        with store, Progress(disable=not progress) as bar:
            task = bar.add_task("recording", total=len(pending))
            for sample in pending:
                if not sample.image_path.is_file():
                    typer.secho(f"skipped {sample.id}: image {sample.image_path} missing", fg=typer.colors.YELLOW, err=True)
                    bar.advance(task)
                    continue
                store.append(recorder.record(sample, key).to_dict())
                bar.advance(task)
    except LLMError as exc:
        fail(f"{exc} (recorded episodes are saved in {out}; rerun to resume)", code=1)
    except KeyboardInterrupt:
        typer.secho(f"interrupted: recorded episodes are saved in {out}; rerun the same command to resume",
                    fg=typer.colors.YELLOW, err=True)
        raise typer.Exit(130) from None
    finally:
        for runner in (agent.runner, side):
            if runner is not None and hasattr(runner, "close"):
                runner.close()
    typer.echo(f"episodes: {out}")
