"""Benchmark the whole loop on real photos with the real embedded LLM and vision tools.

    python benchmarks/bench_agent.py [--model qwen2.5-coder-1.5b] [--mode no_rl] [--limit N]
                                     [--strategy hydra,vipergpt,hammr,avis,hierva]

Prints per question: wall time, LLM calls, prompt and generated tokens, steps, the answer; then
the median time per strategy, and a table of all strategies measured side by side in one run (one
LLM and one set of vision models shared by all, so only the strategy differs). Goals with the 1.5B
model on 2 cores: median <= 60 s per question for HYDRA, <= 45 s for every strategy (issue 12).
The LLM disk cache is disabled so every call is really computed.
"""

from __future__ import annotations

import argparse
import statistics
import time

QUESTIONS = [
    ("coffee", "What color is the cup?"),
    ("bus", "How many people are there?"),
    ("grace_hopper", "Is the person wearing a tie?"),
    ("bus", "What vehicle is in the picture?"),
    ("chelsea", "What animal is this?"),
    ("zidane", "How many people are in the photo?"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--mode", default="no_rl")
    parser.add_argument("--strategy", default="hydra", help="one strategy or a comma-separated list, measured in turn")
    parser.add_argument("--limit", type=int, default=len(QUESTIONS))
    parser.add_argument("--max-steps", type=int, default=3)
    args = parser.parse_args()

    from hydra_vr.assets import sample_image
    from hydra_vr.config import load_config
    from hydra_vr.factory import build_agent, build_toolbox, llm_provider

    base = ["llm.options.model=" + args.model, "llm.options.cache=false", "llm.options.n_ctx=8192",
            f"agent.mode={args.mode}", f"agent.max_steps={args.max_steps}"]
    cfg = load_config("default", base)
    t0 = time.perf_counter()
    chat = llm_provider(cfg)()
    toolbox = build_toolbox(cfg, llm=lambda: chat)
    toolbox.warm_up()
    print(f"vision models loaded in {time.perf_counter() - t0:.1f} s ({args.model}, mode {args.mode})")
    summary = []
    for strategy in [s.strip() for s in args.strategy.split(",") if s.strip()]:
        agent = build_agent(load_config("default", [*base, f"agent.strategy={strategy}"]), llm=chat, toolbox=toolbox)
        times, calls, peaks = [], [], []
        print(f"\n== {strategy}")
        print(f"{'image':<13} {'question':<36} {'s':>6} {'calls':>5} {'prompt':>7} {'gen':>5} {'steps':>5}  answer")
        try:
            for name, question in QUESTIONS[: args.limit]:
                res = agent.run(str(sample_image(name)), question)
                llm = res.llm
                times.append(res.seconds)
                calls.append(llm.get("calls", 0))
                peak = llm.get("peak_prompt_tokens")
                if isinstance(peak, dict) and peak:
                    peaks.append(max(peak.values()))
                print(f"{name:<13} {question[:36]:<36} {res.seconds:6.1f} {llm.get('calls', 0):5.0f} {llm.get('prompt_tokens', 0):7.0f} "
                      f"{llm.get('completion_tokens', 0):5.0f} {len(res.steps):5d}  {res.answer if res.ok else 'ERROR ' + str(res.error)}")
        finally:
            agent.runner.close()
        summary.append((strategy, statistics.median(times), statistics.mean(calls), max(peaks) if peaks else None))
        print(f"{strategy}: median {statistics.median(times):.1f} s per question (the first question of the run pays the cold prefill)")
    print(f"\n{'strategy':<10} {'median s':>9} {'LLM calls':>10} {'peak prompt':>12}")
    for strategy, median, mean_calls, peak in summary:
        print(f"{strategy:<10} {median:9.1f} {mean_calls:10.1f} {peak if peak is not None else '-':>12}")


if __name__ == "__main__":
    main()
