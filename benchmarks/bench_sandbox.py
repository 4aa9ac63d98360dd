"""Sandbox overheads: child start, per executed program, per proxied tool call (no model time).

Run: ``python benchmarks/bench_sandbox.py [--repeats 200] [--calls 200]``. Goals: <= 20 ms per
trivial program, <= 2 ms per proxied tool call. The toolbox here answers instantly, so every
millisecond measured is sandbox overhead (policy compile, IPC, pickling, crops).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from PIL import Image

from hydra_vr.api.types import Answer, Box, Detection
from hydra_vr.sandbox import Sandbox


class InstantToolbox:
    """Answers at once: measures the proxy, not a model."""

    def find(self, image: Image.Image, name: str) -> list[Detection]:
        return []

    def simple_query(self, image: Image.Image, question: str, box: Box | None = None, photo_size: Any = None) -> Answer:
        return Answer("yes", "instant")

    def llm_query(self, question: str, long_answer: bool = True) -> str:
        return "ok"


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _time_runs(sb: Sandbox, code: str, image: str | None, repeats: int) -> tuple[float, list]:
    samples, results = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = sb.run(code, image)
        samples.append(time.perf_counter() - t0)
        if not res.ok:
            raise SystemExit(f"benchmark program failed: {res.error_kind}: {res.error}")
        results.append(res)
    return _median_ms(samples), results


def bench_spawn(repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        with Sandbox() as sb:
            sb.wait_ready()
            samples.append(time.perf_counter() - t0)
    return _median_ms(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200, help="runs per measured program")
    parser.add_argument("--calls", type=int, default=200, help="tool calls per program in the call benchmarks")
    parser.add_argument("--spawns", type=int, default=5, help="children started for the spawn benchmark")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        picture = str(Path(tmp) / "picture.png")
        img = Image.new("RGB", (640, 480))
        img.putdata([(x % 256, y % 256, (x * y) % 256) for y in range(480) for x in range(640)])
        img.save(picture)

        print(f"child start (spawn to ready), median of {args.spawns}: {bench_spawn(args.spawns):.1f} ms")
        with Sandbox(InstantToolbox(), timeout_s=30) as sb:
            sb.wait_ready()
            t0 = time.perf_counter()
            sb.run("x = 1", picture)  # first step with this image: the image travels once
            print(f"first step with a new 640x480 image (sent once per episode): {(time.perf_counter() - t0) * 1000:.1f} ms")

            trivial, results = _time_runs(sb, "x = 1", picture, args.repeats)
            parts = {k: statistics.median(getattr(r.timings, k) for r in results) for k in ("compile", "execute", "report")}
            print(f"trivial program 'x = 1', median of {args.repeats}: {trivial:.2f} ms per program "
                  f"(in the child: compile {parts['compile']:.2f}, execute {parts['execute']:.3f}, report {parts['report']:.3f} ms)"
                  f"  [goal <= 20 ms]")
            typical = "p = ImagePatch(image)\nxs = [i * i for i in range(100)]\nfinal_answer = f'{sum(xs)} {p.width}'"
            print(f"small realistic program (3 lines, patch, comprehension, f-string): {_time_runs(sb, typical, picture, args.repeats)[0]:.2f} ms")

            n = args.calls
            reps = max(5, args.repeats // 10)
            cases = {
                "llm_query (no image)": f"p = ImagePatch(image)\nfor i in range({n}):\n    p.llm_query('q')",
                "find on a crop, sent as (image key, box)": (
                    f"p = ImagePatch(image).crop(100, 100, 300, 260)\nfor i in range({n}):\n    p.find('cup')"),
                "find on the whole 640x480 image by reference": f"p = ImagePatch(image)\nfor i in range({n}):\n    p.find('cup')",
                "find on a 200x160 derived image, sent as pixels": (
                    f"p = ImagePatch(image.crop((100, 100, 300, 260)))\nfor i in range({n}):\n    p.find('cup')"),
            }
            base, _ = _time_runs(sb, "p = ImagePatch(image).crop(100, 100, 300, 260)", picture, reps)
            for label, code in cases.items():
                total, _ = _time_runs(sb, code, picture, reps)
                print(f"per proxied tool call, {label}: {(total - base) / n:.3f} ms  [goal <= 2 ms]")


if __name__ == "__main__":
    main()
