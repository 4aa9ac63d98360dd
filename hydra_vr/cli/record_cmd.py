"""``hydra-vr record``: run the loop over a benchmark and record episodes for controller training."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from hydra_vr.cli.common import (
    CONFIG_OPTION, SET_OPTION, default_examples, fail, load_cli_config, loop_overrides,
    parse_loader_options,
)
from hydra_vr.cli.ray_options import (
    RAY_CPUS_OPTION, RAY_GPUS_OPTION, RAY_MEMORY_OPTION, RAY_OPTION, RAY_RESOURCE_OPTION, RAY_TRIES_OPTION, ray_settings,
)
from hydra_vr.scale import RaySettings

if TYPE_CHECKING:
    from hydra_vr.datasets import Sample
    from hydra_vr.training.recorder import RecordSpec

RECORD_HELP = (
    "Run the loop over a benchmark and record one episode per sample in EPISODES (JSONL) for "
    "hydra-vr train-controller: each step's options, probabilities, memory, their embeddings, and what "
    "executing each option produced, scored against the ground truth.\n\n"
    "--explore all executes every option at every step on a side sandbox (N programs per step); "
    "--explore chosen only the one the policy picked. Rerunning the same command resumes: recorded "
    "samples are skipped, a cut-off last line is redone.\n\n"
    "Example: hydra-vr record --dataset gqa --data-root /data/gqa --limit 300 --out episodes/gqa.jsonl\n\n"
    "On a Ray cluster: add --ray auto (or HOST:PORT) --workers N; only this process writes EPISODES. A sample "
    "whose worker died --max-tries times goes to EPISODES.errors.jsonl instead, and is not retried.\n\n"
    "--rerun-whole-from OLD copies the episodes of OLD (recorded on the same --dataset and --split) into --out, "
    "re-running with this code step 1's whole-question option where it was executed and gave no answer: a failed "
    "whole-question program now runs the fallback program, whose answer ends the episode. One option per episode "
    "at most, so a stale set costs a fraction of recording it again."
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
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="With --ray: Ray actors recording in parallel."),
    ray: str = RAY_OPTION,
    ray_cpus: float = RAY_CPUS_OPTION,
    ray_gpus: float = RAY_GPUS_OPTION,
    ray_memory_mb: int = RAY_MEMORY_OPTION,
    ray_resources: list[str] = RAY_RESOURCE_OPTION,
    max_tries: int = RAY_TRIES_OPTION,
    rerun_whole_from: Path = typer.Option(None, "--rerun-whole-from", help="Copy these recorded episodes to --out, "
                                          "re-running step 1's unanswered whole-question option with this code."),
) -> None:
    from hydra_vr.datasets import DatasetError, load_dataset
    from hydra_vr.datasets.loading import canonical_name
    from hydra_vr.eval.sample_eval import AgentSpec
    from hydra_vr.eval.store import ResultsFile
    from hydra_vr.registry import UnknownComponentError
    from hydra_vr.training.recorder import EXPLORE_MODES, RecordSpec, build_recorder

    if explore not in EXPLORE_MODES:
        fail(f"--explore must be one of {', '.join(EXPLORE_MODES)}")
    cluster = ray_settings(ray, workers, ray_cpus, ray_gpus, ray_memory_mb, ray_resources, max_tries)
    cfg = load_cli_config(config, loop_overrides(overrides, None, controller))
    if cfg.agent.mode in ("one_step", "vipergpt", "no_sampling"):
        fail(f"mode {cfg.agent.mode} makes no controller decisions to record; use no_rl or full")
    try:
        samples = load_dataset(dataset, data_root, split, limit, **parse_loader_options(options))
    except (DatasetError, UnknownComponentError, TypeError) as exc:
        fail(str(exc))
    key = canonical_name(dataset)
    agent = AgentSpec(cfg, controller=str(controller) if controller else None, example_set=examples or default_examples(key))
    if rerun_whole_from is not None:
        if cluster is not None:
            fail("--rerun-whole-from runs in this process; leave out --ray")
        _rerun_whole(RecordSpec(agent, "all", epsilon, seed), key, samples, rerun_whole_from, out, progress)  # "all": a side sandbox
        return
    store, errors = ResultsFile(out), ResultsFile(errors_path(out))
    given_up = errors.repair().ids  # a sample given up after --max-tries is not retried
    done = store.repair().ids | given_up
    pending = [s for s in samples if s.id not in done]
    skipped = len({s.id for s in samples} & given_up)
    typer.echo(f"{len(samples)} samples: {len(samples) - len(pending)} recorded before"
               + (f" ({skipped} of them given up, see {errors.path})" if skipped else "") + f", {len(pending)} to record")
    if not pending:
        return
    for sample in [s for s in pending if not s.image_path.is_file()]:
        typer.secho(f"skipped {sample.id}: image {sample.image_path} missing", fg=typer.colors.YELLOW, err=True)
    pending = [s for s in pending if s.image_path.is_file()]
    spec = RecordSpec(agent, explore, epsilon, seed)
    from rich.progress import Progress

    recorders: list[Any] = []  # the one built here, stopped on the way out
    with _saved_on_exit(out, "recorded episodes", recorders), store, errors, Progress(disable=not progress) as bar:
        task = bar.add_task("recording", total=len(pending))
        if cluster is not None:
            for episode in _ray_episodes(spec, key, pending, cluster):
                (errors if "steps" not in episode else store).append(episode)
                bar.advance(task)
        else:
            recorders.append(build_recorder(spec))
            for sample in pending:
                store.append(recorders[0].record(sample, key).to_dict())
                bar.advance(task)
    if errors.path.is_file() and errors.path.stat().st_size:
        typer.secho(f"samples given up (their worker kept dying): {errors.path}; delete it to retry them",
                    fg=typer.colors.YELLOW, err=True)
    typer.echo(f"episodes: {out}")


def _rerun_whole(spec: RecordSpec, dataset: str, samples: list[Sample], old: Path, out: Path, progress: bool) -> None:
    """``--rerun-whole-from``: OLD's episodes into ``out`` (resumable), whole-question options re-run where stale."""
    from rich.progress import Progress

    from hydra_vr.eval.store import ResultsFile
    from hydra_vr.training.episodes import EpisodeFormatError, iter_episodes
    from hydra_vr.training.recorder import build_recorder

    by_id = {s.id: s for s in samples}
    try:
        episodes = list(iter_episodes(old))
    except EpisodeFormatError as exc:
        fail(str(exc))
    missing = [ep.id for ep in episodes if ep.id not in by_id]
    if missing:
        fail(f"{len(missing)} episodes of {old} are not samples of this dataset and split (first: {missing[0]}); "
             "pass the --dataset, --data-root and --split they were recorded on")
    store = ResultsFile(out)
    done = store.repair().ids
    pending = [ep for ep in episodes if ep.id not in done]
    typer.echo(f"{len(episodes)} episodes in {old}: {len(episodes) - len(pending)} copied before, {len(pending)} to go")
    changed, recorders = 0, []
    with _saved_on_exit(out, "episodes done", recorders), store, Progress(disable=not progress) as bar:
        task = bar.add_task("re-running whole-question options", total=len(pending))
        for episode in pending:
            sample = by_id[episode.id]
            if sample.image_path.is_file():
                if not recorders:  # built on the first episode that needs it: a set with no image left needs none
                    recorders.append(build_recorder(spec))
                changed += recorders[0].rerun_whole(episode, sample, dataset)
            else:
                typer.secho(f"copied {episode.id} as it was: image {sample.image_path} missing", fg=typer.colors.YELLOW, err=True)
            store.append(episode.to_dict())
            bar.advance(task)
    typer.echo(f"{changed} of {len(pending)} episodes changed: their whole-question option now ends the episode")
    typer.echo(f"episodes: {out}")


@contextmanager
def _saved_on_exit(out: Path, what: str, recorders: list[Any]) -> Iterator[None]:
    """An LLM or cluster failure, or Ctrl-C, ends with what is saved in ``out`` and how to resume; the recorders
    built inside (their sandbox children) are stopped whatever happens."""
    from hydra_vr.llm.base import LLMError
    from hydra_vr.scale import ClusterError
    from hydra_vr.training.recorder import close_recorder

    try:
        yield
    except LLMError as exc:
        fail(f"{exc} ({what} are saved in {out}; rerun to resume)", code=1)
    except ClusterError as exc:
        fail(f"{exc} ({what} are saved in {out}; rerun to resume)", code=3)
    except KeyboardInterrupt:
        typer.secho(f"interrupted: {what} are saved in {out}; rerun the same command to resume", fg=typer.colors.YELLOW, err=True)
        raise typer.Exit(130) from None
    finally:
        for recorder in recorders:
            close_recorder(recorder)


def errors_path(out: Path) -> Path:
    """Where ``record --ray`` lists samples given up after --max-tries (kept out of the episode file)."""
    return out.with_name(out.name + ".errors.jsonl")


def _ray_episodes(spec: RecordSpec, dataset: str, pending: list[Sample], cluster: RaySettings) -> Iterator[dict[str, Any]]:
    """Episodes recorded on Ray actors, in completion order; a poison sample yields ``{id, error}``."""
    from hydra_vr.eval.runner import _worker_spec
    from hydra_vr.scale.cluster import ray_session
    from hydra_vr.scale.pool import RayPool
    from hydra_vr.training.recorder import record_with_spec

    spec = replace(spec, agent=_worker_spec(spec.agent, cluster.threads()))
    fn = partial(record_with_spec, spec, dataset)
    with ray_session(cluster) as ray, RayPool(ray, cluster, fn, key=lambda s: s.id,
                                              on_poison=lambda s, why: {"id": s.id, "error": why}) as pool:
        yield from pool.run(pending)
