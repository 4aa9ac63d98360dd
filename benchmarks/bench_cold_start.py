"""Cold start of a new process with and without llama.cpp prefix states on disk.

    python benchmarks/bench_cold_start.py [--model qwen2.5-coder-1.5b] [--image sample:bus] [--question Q]

Times ``hydra-vr ask IMAGE QUESTION`` (LLM answer cache off, so every call is computed):
  1. cold: a fresh process, empty state cache (pays the planner's / reasoner's prefix prefill, writes the states);
  2. warm: a second fresh process, the states on disk;
  3. in-process: the same question asked again in an already-running process (RAM cache, loaded models).
Each run uses a temporary cache root whose entries link to the real cache (models, ...) except
``llm/``, so the states start empty and the real cache is not touched. Wall time of the whole
command (Python start, model loads, the loop), the loop's own time and its time in LLM calls are
printed; the prompt and generated token counts show that the runs did the same work.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def cache_root(shared: Path) -> Path:
    """A cache dir sharing everything with ``shared`` but an empty ``llm/`` (answer cache, states)."""
    root = Path(tempfile.mkdtemp(prefix="hydra-vr-coldstart-"))
    if shared.is_dir():
        for entry in shared.iterdir():
            if entry.name != "llm":
                (root / entry.name).symlink_to(entry)
    return root


def ask_fresh(cli: str, image: str, question: str, overrides: list[str]) -> dict[str, Any]:
    cmd = [cli, "ask", image, question, "--json", *[a for o in overrides for a in ("--set", o)]]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # 1: the loop ran but gave no answer; still a timing
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout[proc.stdout.index("{"):])
    return {"wall": wall, "loop": result.get("seconds"), "llm": result.get("llm") or {}, "answer": result.get("answer")}


def ask_in_process(image: str, question: str, overrides: list[str]) -> list[dict[str, Any]]:
    """Build one agent, ask twice; the second is what a long-running process pays."""
    from hydra_vr.assets import resolve_image
    from hydra_vr.config import load_config
    from hydra_vr.factory import build_agent

    cfg = load_config("default", overrides)
    path = str(resolve_image(image))
    runs = []
    start = time.perf_counter()
    agent = build_agent(cfg)
    try:
        for _ in range(2):
            res = agent.run(path, question)
            runs.append({"wall": time.perf_counter() - start, "loop": res.seconds, "llm": res.llm, "answer": res.answer})
            start = time.perf_counter()
    finally:
        agent.runner.close()
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--image", default="sample:bus")
    parser.add_argument("--question", default="How many people are in the picture?")
    args = parser.parse_args()

    shared = Path(os.environ.get("HYDRA_VR_CACHE", "~/.cache/hydra-vr")).expanduser()
    cli = str(Path(sys.executable).with_name("hydra-vr"))
    root = cache_root(shared)
    overrides = [f"cache_dir={root}", f"llm.options.model={args.model}", "llm.options.cache=false"]
    print(f"{args.model}, {args.image} {args.question!r}, cache root {root}, {os.cpu_count()} CPUs")

    rows = [("fresh process, state cache cold (empty)", ask_fresh(cli, args.image, args.question, overrides))]
    states = root / "llm" / "llama-states"
    size = sum(p.stat().st_size for p in states.rglob("*") if p.is_file()) if states.is_dir() else 0
    rows.append(("fresh process, state cache warm", ask_fresh(cli, args.image, args.question, overrides)))
    first, second = ask_in_process(args.image, args.question, overrides)
    rows.append(("running process, first ask (states on disk)", first))
    rows.append(("running process, same question again", second))

    print(f"\n{'run':<46} {'wall s':>7} {'loop s':>7} {'LLM s':>7} {'calls':>5} {'prompt tok':>10} {'gen tok':>7}  answer")
    for name, r in rows:
        llm = r["llm"]
        print(f"{name:<46} {r['wall']:7.1f} {r['loop'] or 0:7.1f} {llm.get('seconds', 0):7.1f} {llm.get('calls', 0):5.0f} "
              f"{llm.get('prompt_tokens', 0):10.0f} {llm.get('completion_tokens', 0):7.0f}  {r['answer']}")
    print(f"\nstate cache on disk: {size / 2**20:.0f} MiB in {states}")
    print("wall: the whole command (Python start, vision and LLM loads, the loop); loop: the agent's own time;")
    print("LLM: time inside chat calls (prefill, restoring or saving states, generation)")


if __name__ == "__main__":
    main()
