"""Object colours before (whole box, centre-weighted) and after (object foreground) on the sample photos.

    python benchmarks/bench_colors.py [--repeats 10] [--config default] [--per-query 3]

For each object the embedded detector finds, prints the top colours of its box read both ways,
the share of the box the object mask covers, and the milliseconds per call (median of repeats
after one warm-up) of each reading. Goal: the foreground reading in < 30 ms per object on 2 cores.
"""

from __future__ import annotations

import argparse
import statistics

from bench_vision import median_ms  # this folder is on sys.path when the script runs
from PIL import Image

# (sample photo, what to find in it): objects whose box holds much background.
CASES = [
    ("bus", "bus"),
    ("bus", "person"),
    ("zidane", "person"),
    ("zidane", "tie"),
    ("coffee", "cup"),
    ("chelsea", "cat"),
    ("motorcycle", "motorcycle"),
    ("astronaut", "person"),
    ("grace_hopper", "person"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--config", default="default")
    parser.add_argument("--per-query", type=int, default=3, help="objects shown per (photo, query)")
    args = parser.parse_args()

    from hydra_vr.api import VisionToolbox
    from hydra_vr.api import colors as color_ops
    from hydra_vr.assets import sample_image
    from hydra_vr.config import load_config

    cfg = load_config(args.config)
    toolbox = VisionToolbox(cfg.vision, cache_dir=cfg.cache_path)

    def top3(reading: color_ops.ColorReading) -> str:
        return " ".join(f"{c.name} {c.fraction:.0%}" for c in reading.shares(3))

    print(f"{'object':<32}{'box (whole, centre-weighted)':<32}{'object foreground':<32}{'mask':>6}{'ms old':>8}{'ms new':>8}"
          "  verify_property(colour) answers that flip")
    changed = total = flipped = 0
    new_ms: list[float] = []
    for photo, query in CASES:
        image = Image.open(sample_image(photo)).convert("RGB")
        for i, det in enumerate(toolbox.find(image, query)[: args.per_query]):
            crop = image.crop(tuple(int(round(v)) for v in det.box.to_list()))
            before = color_ops.read_colors(crop, foreground=False)
            after = color_ops.read_colors(crop, foreground=True)
            ms_before = median_ms(lambda c=crop: color_ops.read_colors(c, foreground=False), args.repeats)
            ms_after = median_ms(lambda c=crop: color_ops.read_colors(c, foreground=True), args.repeats)
            new_ms.append(ms_after)
            total += 1
            changed += before.top() != after.top()
            mark = "*" if before.top() != after.top() else " "
            mask = f"{after.mask_share:.0%}" if after.mask_share is not None else "-"
            src = "" if after.source == color_ops.FOREGROUND else " (fallback)"
            name = f"{mark}{photo}:{det.label}#{i} {crop.width}x{crop.height}"
            flips = [("+" if after.has(c) else "-") + c for c in color_ops.BASE_COLORS if before.has(c) != after.has(c)]
            flipped += len(flips)
            print(f"{name:<32}{top3(before):<32}{top3(after) + src:<32}{mask:>6}{ms_before:8.1f}{ms_after:8.1f}  {' '.join(flips)}")
    print(f"\n{changed}/{total} objects change their top colour (*), {flipped} yes/no colour answers flip "
          "(+colour: now yes, -colour: now no); foreground ms per object: "
          f"median {statistics.median(new_ms):.1f}, max {max(new_ms):.1f} (goal < 30)")


if __name__ == "__main__":
    main()
