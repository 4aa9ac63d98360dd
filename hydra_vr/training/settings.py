"""RL settings of the controller: reward, observation, DQN, early stopping and selection.

Defaults are the paper's (HYDRA, Ke et al. 2024, and its public ``dqn_train_config.yaml``): an MLP
with one 512-unit hidden layer, learning rate 1e-4, batch 128, learning after 1000 observations,
exploration from 0.2 decaying, a replay buffer. They live in ``hydra_vr/training/controller.yaml``
(packaged with the code) and may be overridden by another YAML file and by ``section.field=value``
strings, like :func:`hydra_vr.config.load_config`.

The YAML is not under ``configs/``: every file there is validated as a :class:`HydraConfig`
profile (``packaged_config_names``), which a training file is not.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hydra_vr.config import ConfigError, read_yaml_with_overrides


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())


class RewardConfig(_Strict):
    """The paper's reward; see :mod:`hydra_vr.training.reward` for the exact form."""

    r1: float = 100.0  # bonus for finishing with an output
    alpha: float = 100.0  # weight of the metric (VQA accuracy / IoU), and the wrong-answer penalty
    replan_penalty: float = 1.0  # cost of one REPLAN (the step index does not advance)
    invalid_reward: float = -100.0  # an empty option slot, or REPLAN past the bound: the episode ends


class ObservationConfig(_Strict):
    memory_chars: int = Field(1000, ge=100)  # embed the newest end of the memory (MiniLM reads 256 tokens)


class DQNConfig(_Strict):
    hidden: list[int] = Field(default_factory=lambda: [512])
    learning_rate: float = 1e-4
    batch_size: int = 128
    learning_starts: int = 1000
    buffer_size: int = 100_000
    exploration_initial_eps: float = 0.2
    exploration_final_eps: float = 0.02
    exploration_fraction: float = 0.3
    gamma: float = 0.99
    train_freq: int = 1
    gradient_steps: int = 1
    target_update_interval: int = 1  # with tau: a soft (Polyak) update after every step, as the paper's code
    tau: float = 0.01
    reward_scale: float = 0.01  # rewards are ~100s: the network learns scaled values, Q is unscaled for selection
    total_timesteps: int = 50_000
    torch_threads: int = 1  # the MLP is small: one thread is as fast, and spares shared machines


class EarlyStopConfig(_Strict):
    eval_interval: int = 1000  # timesteps between greedy evaluations on the validation episodes
    patience: int = 5  # evaluations in the window
    tolerance: float = 0.02  # stop when the window's mean rewards span <= tolerance * max(1, |mean|)
    min_timesteps: int = 5000
    # Small recorded sets overfit: end with the weights of the best validation evaluation
    # (ties go to the later one), not whatever the last step left.
    keep_best: bool = True


class SelectionConfig(_Strict):
    q_temperature: float = 2.0  # reward units: Q gaps of a few T override the planner's probabilities
    # After training, each T here is replayed on the validation episodes and the best mean reward is
    # shipped (ties: the larger T, the planner's own choice). DQN overestimates REPLAN and small gaps
    # between options are noise on a few hundred episodes; the margin that pays is measured, not guessed.
    # Empty: keep q_temperature.
    calibrate: list[float] = Field(default_factory=list)
    # Rewards within this many validation episodes turned from wrong to right (2 * alpha each, over the set's
    # size) count as ties: on 83 episodes T = 2 beat T = 80 by 2.0 units, less than one answer, with 0.46 more
    # planner calls a question; live, those calls cost time and gained no answer.
    tie_episodes: float = Field(1.0, ge=0.0)

    @field_validator("calibrate")
    @classmethod
    def _positive(cls, values: list[float]) -> list[float]:
        if any(t <= 0 for t in values):
            raise ValueError("every calibrate temperature must be > 0")
        return sorted(set(values))


class TrainingConfig(_Strict):
    reward: RewardConfig = RewardConfig()
    observation: ObservationConfig = ObservationConfig()
    dqn: DQNConfig = DQNConfig()
    early_stop: EarlyStopConfig = EarlyStopConfig()
    selection: SelectionConfig = SelectionConfig()
    validation_fraction: float = Field(0.2, ge=0.0, lt=1.0)
    seed: int = 0
    # Train the choice the loop makes before its first plan: the whole question now, or ask the planner
    # (ReplayEnv's whole-first state). A plan costs a call; the controller should buy it only when a
    # planner's step does better. Recorded in the checkpoint, which the loop then asks first.
    whole_first: bool = True


def default_training_config_path() -> Path:
    return Path(str(resources.files("hydra_vr.training").joinpath("controller.yaml")))


def load_training_config(path: Path | str | None = None, overrides: list[str] | None = None) -> TrainingConfig:
    """The packaged ``controller.yaml`` (or ``path``), with ``section.field=value`` overrides."""
    data = read_yaml_with_overrides(Path(path) if path is not None else default_training_config_path(), overrides)
    try:
        return TrainingConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"invalid training config {path or 'controller.yaml'}:\n{exc}") from exc
