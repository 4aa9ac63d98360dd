"""Cold start of a new process with and without llama.cpp prefix states on disk.

    python benchmarks/bench_cold_start.py [--model qwen2.5-coder-1.5b] [--image sample:bus] [--question Q]

Times ``hydra-vr ask IMAGE QUESTION`` (LLM answer cache off, so every call is computed):
  1. cold: a fresh process, empty state cache (pays the planner's / reasoner's prefix prefill, writes the states);
  2. warm: a second fresh process, the states on disk;
  3. in-process: the same question asked again in an already-running process (RAM cache, loaded models).
Each run uses a temporary cache root whose entries link to the real cache (models, ...) except
``llm/``, so the states start empty and the real cache is not touched. A fresh process runs the
``hydra-vr`` CLI app itself, with ``LlamaCppChat.chat`` wrapped to record llama.cpp's own counters
per call. Printed: wall time of the whole command (Python start, model loads, the loop), time in
LLM calls, prompt tokens llama.cpp really evaluated and its milliseconds for them, generation
milliseconds, and the prefix states restored or stored. Token counts do not depend on the load
of a shared machine; seconds do.
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


def record_llama_calls(calls: list[dict[str, Any]]) -> None:
    """Append every LlamaCppChat call's meta (llama.cpp's counters, state cache outcome) to ``calls``."""
    from hydra_vr.llm import llama_cpp_backend

    original = llama_cpp_backend.LlamaCppChat.chat

    def chat(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        calls.append(result.meta)
        return result

    llama_cpp_backend.LlamaCppChat.chat = chat  # type: ignore[method-assign]


# `hydra-vr ARGS` in a fresh interpreter, recording llama.cpp's counters to the file argv[1].
FRESH = f"""
import atexit, json, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from bench_cold_start import record_llama_calls
calls = []
record_llama_calls(calls)
atexit.register(lambda: open(sys.argv[1], "w").write(json.dumps(calls)))
from hydra_vr.cli.main import app
app(sys.argv[2:], prog_name="hydra-vr")
"""


def ask_fresh(image: str, question: str, overrides: list[str], workdir: Path) -> dict[str, Any]:
    record = workdir / f"calls-{time.time_ns()}.json"
    args = ["ask", image, question, "--json", *[a for o in overrides for a in ("--set", o)]]
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", FRESH, str(record), *args], capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1) or not record.exists():  # 1: the loop ran but gave no answer
        raise SystemExit(f"hydra-vr {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout[proc.stdout.index("{"):])
    return {"wall": wall, "llm": result.get("llm") or {}, "answer": result.get("answer"),
            "calls": json.loads(record.read_text())}


def ask_in_process(image: str, question: str, overrides: list[str]) -> list[dict[str, Any]]:
    """Build one agent, ask twice; the second is what a long-running process pays."""
    from hydra_vr.assets import resolve_image
    from hydra_vr.config import load_config
    from hydra_vr.factory import build_agent

    calls: list[dict[str, Any]] = []
    record_llama_calls(calls)
    cfg = load_config("default", overrides)
    path = str(resolve_image(image))
    runs = []
    start = time.perf_counter()
    agent = build_agent(cfg)
    try:
        for _ in range(2):
            del calls[:]
            res = agent.run(path, question)
            runs.append({"wall": time.perf_counter() - start, "llm": res.llm, "answer": res.answer, "calls": list(calls)})
            start = time.perf_counter()
    finally:
        agent.runner.close()
    return runs


def states_column(calls: list[dict[str, Any]]) -> str:
    hits = [c for c in calls if c.get("state_cache") == "hit"]
    stored = [c for c in calls if c.get("state_cache") == "stored"]
    parts = []
    if hits:
        parts.append(f"{len(hits)} restored ({sum(c['state_cache_tokens'] for c in hits)} tok, "
                     f"{sum(c['state_cache_seconds'] for c in hits):.2f} s)")
    if stored:
        parts.append(f"{len(stored)} stored ({sum(c['state_cache_bytes'] for c in stored) / 2**20:.0f} MiB, "
                     f"{sum(c['state_cache_seconds'] for c in stored):.2f} s)")
    return ", ".join(parts) or "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--image", default="sample:bus")
    parser.add_argument("--question", default="How many people are in the picture?")
    args = parser.parse_args()

    shared = Path(os.environ.get("HYDRA_VR_CACHE", "~/.cache/hydra-vr")).expanduser()
    root = cache_root(shared)
    overrides = [f"cache_dir={root}", f"llm.options.model={args.model}", "llm.options.cache=false"]
    print(f"{args.model}, {args.image} {args.question!r}, cache root {root}, {os.cpu_count()} CPUs")

    rows = [("fresh process, state cache cold (empty)", ask_fresh(args.image, args.question, overrides, root))]
    states = root / "llm" / "llama-states"
    size = sum(p.stat().st_size for p in states.rglob("*") if p.is_file()) if states.is_dir() else 0
    rows.append(("fresh process, state cache warm", ask_fresh(args.image, args.question, overrides, root)))
    first, second = ask_in_process(args.image, args.question, overrides)
    rows.append(("running process, first ask (states on disk)", first))
    rows.append(("running process, same question again", second))

    print(f"\n{'run':<44} {'wall s':>7} {'LLM s':>6} {'prefill tok':>11} {'prefill s':>9} {'gen s':>6}  {'states':<40} answer")
    for name, r in rows:
        calls = r["calls"]
        print(f"{name:<44} {r['wall']:7.1f} {r['llm'].get('seconds', 0):6.1f} "
              f"{sum(c.get('prompt_eval_tokens', 0) for c in calls):11.0f} "
              f"{sum(c.get('prompt_eval_ms', 0) for c in calls) / 1e3:9.1f} {sum(c.get('eval_ms', 0) for c in calls) / 1e3:6.1f}  "
              f"{states_column(calls):<40} {r['answer']}")
    print(f"\nstate cache on disk: {size / 2**20:.0f} MiB in {states}")
    print("wall: the whole command (Python start, vision and LLM loads, the loop); LLM: inside chat calls;")
    print("prefill tok / s: prompt tokens llama.cpp evaluated and its time for them; gen s: its decoding time")


if __name__ == "__main__":
    main()
