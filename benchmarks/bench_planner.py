"""What one plan costs: seconds, prompt and decoded tokens of the planner's call with the configured LLM.

    python benchmarks/bench_planner.py [--options 4 5] [--config default] [--set KEY=VALUE ...]

The planner's reply is decoded token by token (about 0.1 s a token for the 1.5B on 2 cores), so its
length decides most of a plan's time. Runs the real :class:`Planner` (its prompt, few-shot turns and
reply schema) on a few questions of this script's own, once to warm the prefix, then timed. Every
call bypasses the reply cache. Run it alone: other work on the CPU slows llama.cpp several times.
"""

from __future__ import annotations

import argparse
import statistics
import time

from hydra_vr.agent.roles import Planner, PromptSet
from hydra_vr.config import load_config
from hydra_vr.llm.factory import build_chat_model
from hydra_vr.llm.wrapper import usage_since, usage_snapshot

QUESTIONS = [
    "Is the kettle to the left or to the right of the toaster?",
    "What colour is the scarf of the child on the bench?",
    "How many boats are moored along the pier?",
    "Is there a bicycle leaning against the fence?",
    "What does the sign above the shop door say?",
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--options", type=int, nargs="+", default=[4, 5], help="options the planner is asked for")
    parser.add_argument("--config", default="default")
    parser.add_argument("--set", action="append", default=[], help="config override KEY=VALUE")
    args = parser.parse_args(argv)
    cfg = load_config(args.config, [*args.set, "llm.options.cache=false"])
    llm = build_chat_model(cfg.llm, cfg.cache_path)
    prompts = PromptSet.for_task("vqa")
    print(f"model: {cfg.llm.options.get('model', cfg.llm.backend)}")
    print("| options asked | mean s/plan | median s | decoded tokens | prompt tokens | options parsed |")
    print("|---|---|---|---|---|---|")
    for n in args.options:
        planner = Planner(llm, prompts, n=n)
        planner.propose("Is anything on the table?", "No steps yet.")  # evaluates and keeps the prefix
        seconds, decoded, prompt, parsed = [], [], [], []
        for q in QUESTIONS:
            before = usage_snapshot(llm)
            t = time.perf_counter()
            out = planner.propose(q, "No steps yet.")
            seconds.append(time.perf_counter() - t)
            used = usage_since(llm, before)
            decoded.append(used["completion_tokens"])
            prompt.append(used["prompt_tokens"])
            parsed.append(len(out.options))
        print(f"| {n} | {statistics.mean(seconds):.1f} | {statistics.median(seconds):.1f} | {statistics.mean(decoded):.0f} "
              f"| {statistics.mean(prompt):.0f} | {statistics.mean(parsed):.1f} |")


if __name__ == "__main__":
    main()
