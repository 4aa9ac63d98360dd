"""``hydra-vr train-controller``: DQN on recorded episodes -> a controller checkpoint."""

from __future__ import annotations

from pathlib import Path

import typer

from hydra_vr.cli.common import fail

TRAIN_HELP = (
    "Train the RL controller (stable-baselines3 DQN, the paper's settings) by replaying episodes "
    "recorded with hydra-vr record; no LLM or tool is called. Writes CKPT/model.zip, CKPT/meta.json "
    "(embedding model, N, reward settings) and CKPT/training_curve.png (reward and accuracy), and "
    "prints the held-out comparison with the planner's probabilities.\n\n"
    "Use the checkpoint with: hydra-vr ask|ground|eval --controller CKPT\n\n"
    "Example: hydra-vr train-controller --episodes episodes/gqa.jsonl --out ckpt/gqa"
)


def train_command(
    episodes: list[Path] = typer.Option(..., "--episodes", "-e", help="Recorded episode file(s) (repeatable)."),
    out: Path = typer.Option(..., "--out", "-o", help="Checkpoint directory (created)."),
    timesteps: int = typer.Option(None, "--timesteps", min=1, help="Training steps (default: the training config's)."),
    training_config: Path = typer.Option(None, "--training-config", help="YAML with reward/dqn/early_stop/selection settings."),
    overrides: list[str] = typer.Option(None, "--set", help="Override a training setting, e.g. --set dqn.learning_rate=3e-4 (repeatable)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
) -> None:
    from hydra_vr.config import ConfigError
    from hydra_vr.training.episodes import EpisodeFormatError, load_episodes
    from hydra_vr.training.settings import load_training_config
    from hydra_vr.training.train import train_controller

    try:
        cfg = load_training_config(training_config, overrides or [])
        data = load_episodes(episodes)
    except (ConfigError, EpisodeFormatError) as exc:
        fail(str(exc))
    if not any(ep.steps for ep in data):
        fail("the episode files hold no episode with a controller decision")
    typer.echo(f"{len(data)} episodes ({data[0].embedding_name}, {data[0].embedding_dim}-d, N = {data[0].num_options})")
    result = train_controller(data, cfg, out, total_timesteps=timesteps, progress_bar=progress)
    typer.echo(f"{result.timesteps} timesteps in {result.seconds:.0f} s" + (" (stopped early: reward converged)" if result.stopped_early else ""))
    if result.best_timesteps is not None and result.best_timesteps != result.timesteps:
        typer.echo(f"kept the weights from timestep {result.best_timesteps} (best validation reward)")
    if result.temperature_sweep:
        sweep = ", ".join(f"{row['q_temperature']:g}: {row['mean_reward']:.1f}" for row in result.temperature_sweep)
        typer.echo(f"selection margin T = {result.temperature:g} (validation reward by T: {sweep}; ties go to the larger T)")
    for stats in (result.validation, result.baseline):
        if stats is not None:
            typer.echo(f"  held-out {stats.policy:<20} reward {stats.mean_reward:8.2f}  accuracy {stats.accuracy:.3f}  "
                       f"steps {stats.mean_steps:.2f}  ({stats.episodes} episodes)")
    typer.echo(f"checkpoint: {result.checkpoint}" + (f"\ncurve: {result.curve}" if result.curve else ""))


EXPORT_HELP = (
    "Write the inference-only form of a controller checkpoint: CKPT/meta.json and the online Q-network's "
    "weights (q_net.pt, float16 unless --full-precision), a tenth of model.zip's size. hydra-vr ask|ground|eval "
    "--controller OUT reads it like the original; training cannot resume from it. The checkpoint the package "
    "ships (used by --mode full without --controller) is in this form.\n\n"
    "Example: hydra-vr export-controller ckpt/gqa ckpt/gqa-small"
)


def export_command(
    checkpoint: Path = typer.Argument(..., help="A checkpoint directory (hydra-vr train-controller --out)."),
    out: Path = typer.Argument(..., help="Directory to write (created)."),
    full_precision: bool = typer.Option(False, "--full-precision", help="Keep float32 weights (twice the size)."),
) -> None:
    from hydra_vr.controller.checkpoint import WEIGHTS_FILE, CheckpointError, export_checkpoint

    try:
        written = export_checkpoint(checkpoint, out, half=not full_precision)
    except CheckpointError as exc:
        fail(str(exc))
    size = (written / WEIGHTS_FILE).stat().st_size
    typer.echo(f"{written}: meta.json and {WEIGHTS_FILE} ({size / 1e6:.1f} MB)")
