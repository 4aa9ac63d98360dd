"""The controller's reward (HYDRA, Ke et al. 2024, section 3.3), and how an output is scored.

With ``t`` the 1-based step index of the decision (the loop's ``ControllerState.step``):

- an executed option that does not end the episode: ``r_t = -t``;
- an option that ends it with an output whose metric ``m`` (VQA accuracy in [0, 1], or IoU) is
  positive ("right or related"): ``r_T = R1 - T + alpha * m``;
- one that ends it with a wrong output (``m == 0``, no answer, or a failed episode):
  ``r_T = R1 - T - alpha``;
- REPLAN: ``-replan_penalty`` (the step index does not advance; replans are bounded);
- an invalid action (an empty option slot, or REPLAN past ``max_replans``): ``invalid_reward``, and
  the episode ends.

So with R1 = alpha = 100 the per-step rewards are -1, -2, ... and an episode answered right
(m = 1) at step T returns ``R1 - T(T+1)/2 + alpha`` (199 at T = 1, 197 at T = 2, 194 at T = 3),
a wrong one ``R1 - T(T+1)/2 - alpha`` (-1, -3, -6): every extra step costs its index, a right
answer is worth 200 more than a wrong one.

Reading of the paper and its public code (github.com/ControlNet/HYDRA, ``HydraTrainingRL``): the
code keeps a running ``sub_reward`` that subtracts the step index at each step, adds
``100 * IoU`` (grounding) or the accuracy (VQA) on the final step and subtracts 100 on an
execution error. We use the paper's stated per-transition form above instead of the running sum
(which double-counts earlier steps), with the error case folded into "wrong".
"""

from __future__ import annotations

from collections.abc import Sequence

from hydra_vr.datasets import Sample
from hydra_vr.eval.scoring import IOU_THRESHOLD, score_sample
from hydra_vr.training.settings import RewardConfig


def step_reward(cfg: RewardConfig, step: int) -> float:
    """An executed option at step ``step`` that does not end the episode."""
    return -float(step)


def final_reward(cfg: RewardConfig, step: int, metric: float | None) -> float:
    """The option at step ``step`` that ends the episode with an output scoring ``metric``."""
    m = float(metric or 0.0)
    return cfg.r1 - step + (cfg.alpha * m if m > 0 else -cfg.alpha)


def replan_reward(cfg: RewardConfig) -> float:
    return -cfg.replan_penalty


def reward_metric(sample: Sample, dataset: str, answer: str | None, boxes: Sequence[Sequence[float]]) -> float:
    """The metric the reward uses: the benchmark's official answer score (GQA exact match, OK-VQA
    accuracy, A-OKVQA direct answer; :func:`hydra_vr.eval.scoring.score_sample`), or the IoU of the
    first box for grounding (the paper adds ``100 * IoU``, not the 0/1 hit). 0 without ground truth."""
    scores = score_sample(sample, answer, list(boxes), dataset)
    if "iou" in scores.scores:
        return float(scores.scores["iou"])
    return float(scores.score or 0.0)


def is_correct(task: str, metric: float | None) -> float:
    """The accuracy an output counts for: the answer score itself, or IoU >= 0.5 for grounding."""
    m = float(metric or 0.0)
    return float(m >= IOU_THRESHOLD) if task == "grounding" else m
