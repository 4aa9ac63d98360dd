"""Compare the trained controller with planner probability and random on held-out recorded episodes.

Mean reward, accuracy, mean executed steps (and REPLANs, unknown-continuation rate) per policy,
replayed offline (no LLM or tool call). Two ways to run it:

    # real recordings: a checkpoint and episodes it was NOT trained on
    python benchmarks/controller_report.py --checkpoint ckpt/gqa --episodes episodes/gqa-heldout.jsonl

    # real recordings, split here: hold out --holdout of them, train on the rest, compare on the held-out
    python benchmarks/controller_report.py --episodes episodes/gqa.jsonl --holdout 0.2 --out runs/ctl/report.json

    # the synthetic set (hydra_vr.training.synthetic; NOT real data): generate, split, train, compare
    python benchmarks/controller_report.py --synthetic 800 --timesteps 5000

Goal: the trained policy is at least as accurate as planner probability, in fewer steps. With real
recordings it also prints what step 1 left a controller to choose (``choice_headroom``): where the whole
question was right already, where another option rescued or answered sooner, and the oracle accuracy.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def _rows(checkpoint: Path, episodes: list[Any], reward: Any) -> list[Any]:
    from hydra_vr.controller.checkpoint import load_checkpoint
    from hydra_vr.training.evaluation import PolicyStats, dqn_policy, evaluate_policy, planner_probability_policy, random_policy

    ck = load_checkpoint(checkpoint, embedding_name=episodes[0].embedding_name, embedding_dim=episodes[0].embedding_dim,
                         num_options=episodes[0].num_options, where="the episodes")
    n, scale, temp = ck.meta.num_options, ck.meta.reward_scale, ck.meta.q_temperature
    first = ck.meta.whole_first  # every policy replays the decisions the checkpoint was trained on

    def run(name: str, policy: Any) -> Any:
        return evaluate_policy(name, policy, episodes, reward, whole_first=first)

    rows = [
        run("dqn (Q x p)", dqn_policy(ck.q_net, n, reward_scale=scale, temperature=temp)),
        run("dqn (argmax Q)", dqn_policy(ck.q_net, n, reward_scale=scale, temperature=temp, use_probabilities=False)),
        run("planner probability", planner_probability_policy()),
    ]
    randoms = [run("random", random_policy(seed)) for seed in range(5)]
    fields = ("mean_reward", "accuracy", "mean_steps", "replans", "unknown_rate", "invalid_rate", "plans")
    rows.append(PolicyStats("random (mean of 5 seeds)", randoms[0].episodes,
                            *(float(np.mean([getattr(r, f) for r in randoms])) for f in fields)))
    return rows


def _table(rows: list[Any]) -> str:
    lines = ["| policy | episodes | mean reward | accuracy | mean steps | planner calls | replans | unknown |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r.policy} | {r.episodes} | {r.mean_reward:.1f} | {r.accuracy:.3f} | {r.mean_steps:.2f} | "
              f"{r.plans:.2f} | {r.replans:.2f} | {r.unknown_rate:.2f} |" for r in rows]
    return "\n".join(lines)


def _headroom_table(parts: dict[str, Any]) -> str:
    lines = ["| episodes | n | whole right | rescued | sooner | later right | none right | choice matters | oracle acc. | option cos |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, h in parts.items():
        lines.append(f"| {name} | {h.episodes} | {h.whole_right} | {h.rescued} | {h.sooner} | {h.later_right} | {h.none_right} | "
                     f"{h.choice_matters} | {h.oracle_accuracy:.3f} | {h.option_similarity:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", type=Path, help="trained controller (hydra-vr train-controller --out)")
    ap.add_argument("--episodes", type=Path, nargs="+", help="recorded episode files: held out (with --checkpoint), else split")
    ap.add_argument("--synthetic", type=int, help="generate this many synthetic episodes, hold out --holdout, train, compare")
    ap.add_argument("--holdout", type=float, default=0.25)
    ap.add_argument("--timesteps", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="write the figures here as JSON (and the synthetic run's checkpoint next to it)")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                    help="a training setting, as train-controller --set (e.g. dqn.torch_threads=2)")
    args = ap.parse_args(argv)

    from hydra_vr.training.evaluation import choice_headroom
    from hydra_vr.training.settings import load_training_config

    cfg = load_training_config(None, [f"seed={args.seed}", *args.sets])
    info: dict[str, Any] = {}
    if args.synthetic or (args.episodes and not args.checkpoint):
        from hydra_vr.training.train import split_episodes, train_controller

        if args.synthetic:
            from hydra_vr.controller.observation import ObservationEncoder
            from hydra_vr.llm.minilm import MiniLMEmbedder
            from hydra_vr.training.synthetic import synthetic_episodes

            episodes = synthetic_episodes(args.synthetic, ObservationEncoder(MiniLMEmbedder(), 5), seed=args.seed)
            data = "synthetic (hydra_vr.training.synthetic), not real recordings"
        else:
            from hydra_vr.training.episodes import load_episodes

            episodes = [e for e in load_episodes(args.episodes) if e.steps]
            data = "recorded: " + ", ".join(str(p) for p in args.episodes)
        train, test = split_episodes(episodes, args.holdout, seed=args.seed)
        ckpt = (args.out.with_suffix("") if args.out else Path(tempfile.mkdtemp())) / "checkpoint"
        t0 = time.perf_counter()
        result = train_controller(train, cfg, ckpt, total_timesteps=args.timesteps)
        info = {"data": data, "train_episodes": len(train), "timesteps": result.timesteps,
                "stopped_early": result.stopped_early, "q_temperature": result.temperature,
                "temperature_sweep": result.temperature_sweep, "train_seconds": round(time.perf_counter() - t0, 1),
                "checkpoint": str(ckpt), "curve": str(result.curve) if result.curve else None}
        checkpoint = ckpt
    elif args.checkpoint and args.episodes:
        from hydra_vr.training.episodes import load_episodes

        test, checkpoint = [e for e in load_episodes(args.episodes) if e.steps], args.checkpoint
    else:
        ap.error("give --episodes (split, train and compare), --checkpoint with held-out --episodes, or --synthetic N")
    rows = _rows(checkpoint, test, cfg.reward)
    print(json.dumps(info, indent=1) if info else "")
    if args.episodes:
        held_out = choice_headroom(test)
        print(_headroom_table({"held out": held_out, **({"all": choice_headroom(test + train)} if info else {})}))
        info["headroom"] = {"held_out": held_out.to_dict()}
    print(_table(rows))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({**info, "held_out_episodes": len(test), "rows": [r.to_dict() for r in rows]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
