"""Benchmark the embedded vision stack: cold load time, per-tool latency, peak RSS.

    python benchmarks/bench_vision.py [--repeats 20] [--config default]

Goals on 2 CPU cores: detection <= 60 ms per image, classification <= 50 ms per crop, all
embedded vision models loaded in <= 10 s, <= 2 GiB RSS for the vision stack. Run it on an idle
machine; it prints medians over repeats after one warm-up call.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from collections.abc import Callable

from PIL import Image


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up: first call pays for lazy allocations
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--config", default="default")
    args = parser.parse_args()

    t_start = time.perf_counter()
    from hydra_vr.api import VisionToolbox
    from hydra_vr.assets import sample_image
    from hydra_vr.config import load_config

    cfg = load_config(args.config)
    toolbox = VisionToolbox(cfg.vision, cache_dir=cfg.cache_path)
    base_rss = rss_mib()
    loads = toolbox.warm_up()
    total_load = time.perf_counter() - t_start
    print("cold load (s, including imports):")
    for role, sec in loads.items():
        print(f"  {role:<11} {sec:6.2f}")
    print(f"  total      {total_load:6.2f}   (goal <= 10 s)")

    images = {n: Image.open(sample_image(n)).convert("RGB") for n in ("bus", "coffee", "grace_hopper", "zidane")}
    det = toolbox.backend("detector")
    print("\nper-call latency (ms, median of", args.repeats, "after warm-up):")
    det_ms = [median_ms(lambda im=im: det.detect_classes(im), args.repeats) for im in images.values()]
    for name, ms in zip(images, det_ms):
        print(f"  detect {name:<13} {ms:7.1f}")
    print(f"  detect (median over images) {statistics.median(det_ms):7.1f}   (goal <= 60)")
    crop = images["coffee"].crop((140, 10, 426, 398))
    clf = toolbox.backend("classifier")
    print(f"  classify one crop           {median_ms(lambda: clf.classify([crop]), args.repeats):7.1f}   (goal <= 50)")
    crops = [images["bus"].crop((i * 50, 200, i * 50 + 300, 800)) for i in range(8)]
    batch_ms = median_ms(lambda: clf.classify(crops), max(3, args.repeats // 4))
    print(f"  classify batch of 8, per crop {batch_ms / 8:5.1f}")
    print(f"  colours one crop            {median_ms(lambda: toolbox.colors(crop), args.repeats):7.1f}")
    if toolbox.has("faces"):
        faces = toolbox.backend("faces")
        print(f"  faces bus photo             {median_ms(lambda: faces.detect_faces(images['bus']), max(3, args.repeats // 4)):7.1f}")
    if toolbox.has("ocr"):
        ocr = toolbox.backend("ocr")
        page = Image.open(sample_image("page")).convert("RGB")
        print(f"  ocr page.png                {median_ms(lambda: ocr.read_text(page), 3):7.1f}")
    print(f"\npeak RSS: {rss_mib():.0f} MiB (python + libraries before loading: {base_rss:.0f} MiB; goal <= 2048)")


if __name__ == "__main__":
    main()
