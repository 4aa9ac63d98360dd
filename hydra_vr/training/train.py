"""Train the controller with stable-baselines3 DQN on replayed episodes.

The network is SB3's MLP Q-network with ``net_arch=[512]`` (one hidden layer), invalid actions
masked from the observation (:mod:`hydra_vr.controller.qnet`), Adam at 1e-4,
batch 128, learning after 1000 transitions, epsilon-greedy from 0.2 decaying linearly to 0.02
over the first 30% of the run, a replay buffer, a soft target update (tau 0.01) after every step.
Rewards are multiplied by ``reward_scale`` (0.01) for learning only; Q-values are divided back for
selection and reported rewards are unscaled.

Every ``eval_interval`` timesteps the greedy policy (Q x p rule) replays the validation episodes;
training stops early when the last ``patience`` evaluations' mean rewards span no more than
``tolerance * max(1, |their mean|)`` (after ``min_timesteps``). With ``keep_best`` (default) the
checkpoint holds the weights of the best evaluation after learning started, so a run that overfits a
small recorded set does not end worse than it was. The curve PNG shows the
validation reward and accuracy, the training episode return, and the planner-probability baseline.

Memory: the buffer holds two float32 observations per transition, ~21 KB with MiniLM and N = 5,
so it is capped at the run's total timesteps (1 GB for 50k).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from hydra_vr.controller.checkpoint import CheckpointMeta, save_checkpoint
from hydra_vr.training.episodes import RecordedEpisode
from hydra_vr.training.evaluation import PolicyStats, dqn_policy, evaluate_policy, planner_probability_policy
from hydra_vr.training.replay_env import ReplayEnv
from hydra_vr.training.settings import TrainingConfig


@dataclass
class TrainResult:
    checkpoint: Path
    timesteps: int
    seconds: float
    stopped_early: bool
    history: list[dict[str, float]] = field(default_factory=list)  # per evaluation
    best_timesteps: int | None = None  # the evaluation whose weights were kept (keep_best)
    train_returns: list[tuple[int, float]] = field(default_factory=list)  # (timestep, episode return)
    validation: PolicyStats | None = None
    baseline: PolicyStats | None = None
    curve: Path | None = None
    temperature: float | None = None  # the T shipped in the checkpoint
    temperature_sweep: list[dict[str, Any]] = field(default_factory=list)  # validation stats per calibrated T


def split_episodes(episodes: Sequence[RecordedEpisode], fraction: float, seed: int = 0) -> tuple[list[RecordedEpisode], list[RecordedEpisode]]:
    """(train, held-out) by a seeded shuffle; with fraction 0 or too few episodes, held-out = train."""
    items = list(episodes)
    random.Random(seed).shuffle(items)
    n_val = int(round(len(items) * fraction))
    if n_val == 0 or n_val >= len(items):
        return items, items
    return items[n_val:], items[:n_val]


def converged(rewards: Sequence[float], patience: int, tolerance: float) -> bool:
    if len(rewards) < patience:
        return False
    window = np.asarray(rewards[-patience:], dtype=float)
    return float(window.max() - window.min()) <= tolerance * max(1.0, abs(float(window.mean())))


def _evaluate(name: str, policy: Any, episodes: Sequence[RecordedEpisode], cfg: TrainingConfig) -> PolicyStats:
    """A policy replayed on ``episodes`` with the training's reward and decisions (``whole_first``)."""
    return evaluate_policy(name, policy, episodes, cfg.reward, whole_first=cfg.whole_first)


def _make_callback(num_options: int, val: Sequence[RecordedEpisode], cfg: TrainingConfig, result: TrainResult) -> Any:
    from stable_baselines3.common.callbacks import BaseCallback

    es = cfg.early_stop

    class EvalAndStop(BaseCallback):
        """Greedy evaluation on held-out episodes; ends training when the reward has converged."""

        best: tuple[float, dict[str, Any]] | None = None  # (validation reward, policy weights)

        def _on_step(self) -> bool:
            for info in self.locals.get("infos", []):
                if "episode" in info:  # Monitor's unscaled episode return
                    result.train_returns.append((self.num_timesteps, float(info["episode"]["r"])))
            if self.num_timesteps % es.eval_interval:
                return True
            stats = _evaluate("dqn", self._policy(), val, cfg)
            result.history.append({"timesteps": self.num_timesteps, "mean_reward": stats.mean_reward,
                                   "accuracy": stats.accuracy, "mean_steps": stats.mean_steps})
            # An evaluation before learning starts is the untrained network: on a small set whose best policy
            # is the planner's choice it can tie the best, and keeping it would ship random weights.
            learnt = self.num_timesteps > cfg.dqn.learning_starts
            if es.keep_best and learnt and (self.best is None or stats.mean_reward >= self.best[0]):
                self.best = (stats.mean_reward, {k: v.detach().clone() for k, v in self.model.policy.state_dict().items()})
                result.best_timesteps = self.num_timesteps
            if self.num_timesteps >= es.min_timesteps and converged([h["mean_reward"] for h in result.history], es.patience, es.tolerance):
                result.stopped_early = True
                return False
            return True

        def _policy(self) -> Any:
            return dqn_policy(self.model.policy.q_net, num_options, reward_scale=cfg.dqn.reward_scale,
                              temperature=cfg.selection.q_temperature)

    return EvalAndStop()


def calibrate_temperature(q_net: Any, num_options: int, val: Sequence[RecordedEpisode],
                          cfg: TrainingConfig) -> tuple[float, PolicyStats, list[dict[str, Any]]]:
    """The selection margin T (:func:`hydra_vr.controller.dqn.select_action`) with the best validation reward.

    Each T of ``cfg.selection.calibrate`` is replayed on ``val``; ties go to the larger T, whose choices
    are nearer the planner's own, so the network overrules the planner only where that paid on held-out
    episodes. A tie is a mean reward within ``selection.tie_episodes`` answers of the best (one wrong answer
    turned right moves it by ``2 * alpha / len(val)``): a smaller gap is one episode's noise, not a margin
    that pays. Returns (T, its validation stats, one row of validation stats per T)."""
    runs = [(t, _evaluate("dqn", dqn_policy(q_net, num_options, reward_scale=cfg.dqn.reward_scale, temperature=t), val, cfg))
            for t in cfg.selection.calibrate]
    best = max(round(stats.mean_reward, 9) for _, stats in runs)
    margin = cfg.selection.tie_episodes * 2 * cfg.reward.alpha / max(1, len(val))
    t, stats = max((run for run in runs if round(run[1].mean_reward, 9) >= best - margin - 1e-9), key=lambda run: run[0])
    return float(t), stats, [{"q_temperature": temp, **row.to_dict()} for temp, row in runs]


def build_model(env: Any, cfg: TrainingConfig, total_timesteps: int) -> Any:
    from stable_baselines3 import DQN

    from hydra_vr.training.masked_dqn import MaskedDQNPolicy

    d = cfg.dqn
    return DQN(
        MaskedDQNPolicy, env, learning_rate=d.learning_rate, buffer_size=max(1, min(d.buffer_size, total_timesteps)),
        learning_starts=d.learning_starts, batch_size=d.batch_size, tau=d.tau, gamma=d.gamma, train_freq=d.train_freq,
        gradient_steps=d.gradient_steps, target_update_interval=d.target_update_interval,
        exploration_fraction=d.exploration_fraction, exploration_initial_eps=d.exploration_initial_eps,
        exploration_final_eps=d.exploration_final_eps, policy_kwargs={"net_arch": list(d.hidden)},
        seed=cfg.seed, device="cpu", verbose=0,
    )


def train_controller(episodes: Sequence[RecordedEpisode], cfg: TrainingConfig, out: Path | str, *,
                     validation: Sequence[RecordedEpisode] | None = None, total_timesteps: int | None = None,
                     progress_bar: bool = False, curve: bool = True) -> TrainResult:
    """Train on ``episodes``, evaluate on ``validation`` (default: a held-out split), save a checkpoint in ``out``."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(cfg.dqn.torch_threads)
    try:
        return _train(episodes, cfg, out, validation, total_timesteps, progress_bar, curve)
    finally:
        torch.set_num_threads(threads)


def _train(episodes: Sequence[RecordedEpisode], cfg: TrainingConfig, out: Path | str, validation: Sequence[RecordedEpisode] | None,
           total_timesteps: int | None, progress_bar: bool, curve: bool) -> TrainResult:
    import gymnasium as gym
    from stable_baselines3.common.monitor import Monitor


    if validation is None:
        train, val = split_episodes(episodes, cfg.validation_fraction, cfg.seed)
    else:
        train, val = list(episodes), list(validation)
    steps = int(total_timesteps or cfg.dqn.total_timesteps)
    env = ReplayEnv(train, cfg.reward, order="random", whole_first=cfg.whole_first)
    scale = cfg.dqn.reward_scale
    wrapped = gym.wrappers.TransformReward(Monitor(env), lambda r: r * scale)
    model = build_model(wrapped, cfg, steps)
    result = TrainResult(checkpoint=Path(out), timesteps=0, seconds=0.0, stopped_early=False)
    callback = _make_callback(env.num_options, val, cfg, result)
    t0 = time.perf_counter()
    model.learn(total_timesteps=steps, callback=callback, progress_bar=progress_bar)
    result.seconds = time.perf_counter() - t0
    result.timesteps = int(model.num_timesteps)
    policy = dqn_policy(model.policy.q_net, env.num_options, reward_scale=scale, temperature=cfg.selection.q_temperature)
    result.validation = _evaluate("dqn", policy, val, cfg)
    if callback.best is not None and result.validation.mean_reward < callback.best[0]:
        model.policy.load_state_dict(callback.best[1])
        result.validation = _evaluate("dqn", policy, val, cfg)
    elif cfg.early_stop.keep_best:
        result.best_timesteps = result.timesteps  # the final weights are (one of) the best
    temperature = cfg.selection.q_temperature
    if cfg.selection.calibrate:
        temperature, result.validation, result.temperature_sweep = calibrate_temperature(model.policy.q_net, env.num_options,
                                                                                           val, cfg)
    result.temperature = temperature
    result.baseline = _evaluate("planner_probability", planner_probability_policy(), val, cfg)
    first = train[0]
    meta = CheckpointMeta(
        embedding_name=first.embedding_name, embedding_dim=first.embedding_dim, num_options=first.num_options,
        memory_chars=cfg.observation.memory_chars, reward=cfg.reward.model_dump(), reward_scale=scale,
        gamma=cfg.dqn.gamma, q_temperature=temperature, whole_first=cfg.whole_first,
        training={"timesteps": result.timesteps, "seconds": round(result.seconds, 1), "stopped_early": result.stopped_early,
                  "best_timesteps": result.best_timesteps,
                  "train_episodes": len(train), "validation_episodes": len(val), "seed": cfg.seed,
                  "validation": result.validation.to_dict(), "temperature_sweep": result.temperature_sweep, "created": datetime.now(timezone.utc).isoformat(timespec="seconds")},
    )
    save_checkpoint(model, meta, out)
    if curve:
        result.curve = plot_curve(result, Path(out) / "training_curve.png")
    return result


def plot_curve(result: TrainResult, path: Path) -> Path:
    """Reward (validation, training episodes, planner baseline) and accuracy against timesteps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_r, ax_a) = plt.subplots(1, 2, figsize=(10, 4))
    if result.train_returns:
        ts, rs = zip(*result.train_returns)
        k = max(1, len(rs) // 50)
        smooth = np.convolve(rs, np.ones(k) / k, mode="valid")
        ax_r.plot(ts[k - 1:], smooth, color="0.6", lw=1, label=f"training episodes (mean of {k})")
    if result.history:
        ts = [h["timesteps"] for h in result.history]
        ax_r.plot(ts, [h["mean_reward"] for h in result.history], "o-", label="validation (greedy)")
        ax_a.plot(ts, [h["accuracy"] for h in result.history], "o-", label="validation (greedy)")
    if result.baseline is not None:
        ax_r.axhline(result.baseline.mean_reward, ls="--", color="C3", label="planner probability")
        ax_a.axhline(result.baseline.accuracy, ls="--", color="C3", label="planner probability")
    ax_r.set(xlabel="timesteps", ylabel="episode reward", title="reward")
    ax_a.set(xlabel="timesteps", ylabel="accuracy", title="accuracy", ylim=(0, 1.05))
    for ax in (ax_r, ax_a):
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
