"""Keep a recording's new episodes in git: the complete lines of a growing episode file whose ids no kept
file holds, written gzip-compressed as one more file here.

    python benchmarks/episodes/keep.py /tmp/easyvqa-train.jsonl benchmarks/episodes/easyvqa-train-2026-11-28.jsonl.gz

Rerun with the same target while the recording grows: the target is rewritten with every new episode so far
(ids in the *other* .jsonl.gz files of its folder are left out). A cut-off last line (a recording in progress) is not kept.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path


def kept_ids(folder: Path, skip: Path) -> set[str]:
    """Ids of the episodes the kept files of ``folder`` hold, ``skip`` aside."""
    ids: set[str] = set()
    for path in sorted(folder.glob("*.jsonl.gz")):
        if path.resolve() != skip.resolve():
            ids |= {json.loads(line)["id"] for line in gzip.decompress(path.read_bytes()).decode().splitlines() if line.strip()}
    return ids


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("episodes", type=Path, help="the recording's JSONL file (hydra-vr record --out)")
    ap.add_argument("target", type=Path, help="the .jsonl.gz file to write; other .jsonl.gz files beside it are the kept ones")
    args = ap.parse_args(argv)
    if args.target.suffix != ".gz":
        ap.error("the target must end in .jsonl.gz")
    seen = kept_ids(args.target.parent, args.target)
    lines = []
    for line in args.episodes.read_text().splitlines():
        try:
            episode = json.loads(line)
        except json.JSONDecodeError:
            continue  # the line being written
        if episode["id"] not in seen:
            seen.add(episode["id"])
            lines.append(line)
    args.target.write_bytes(gzip.compress("".join(f"{x}\n" for x in lines).encode(), compresslevel=9, mtime=0))
    print(f"{args.target}: {len(lines)} episodes, {args.target.stat().st_size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
