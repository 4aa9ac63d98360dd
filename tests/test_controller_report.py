"""benchmarks/controller_report.py on recorded episodes: split, train, compare on the held-out part."""

from __future__ import annotations

import json
from pathlib import Path

from hydra_vr.training.episodes import load_episodes
from tests.benchmark_scripts import load

EPISODES = Path(__file__).parent / "fixtures" / "episodes" / "easyvqa_qwen05b_recorded.jsonl"


def test_report_splits_trains_and_compares_on_the_held_out_part(tmp_path, capsys):
    report = load("controller_report")
    out = tmp_path / "ctl" / "report.json"
    assert report.main(["--episodes", str(EPISODES), "--holdout", "0.25", "--timesteps", "300", "--out", str(out)]) == 0
    figures = json.loads(out.read_text())
    usable = [e for e in load_episodes([EPISODES]) if e.steps]
    assert figures["train_episodes"] + figures["held_out_episodes"] == len(usable)
    assert figures["data"].startswith("recorded: ") and Path(figures["checkpoint"], "meta.json").is_file()
    policies = [r["policy"] for r in figures["rows"]]
    assert policies[:3] == ["dqn (Q x p)", "dqn (argmax Q)", "planner probability"]
    assert all(r["episodes"] == figures["held_out_episodes"] for r in figures["rows"])
    printed = capsys.readouterr().out
    assert "| planner probability |" in printed
    head = figures["headroom"]["held_out"]  # every held-out episode is in exactly one class
    classes = ("whole_right", "rescued", "sooner", "later_right", "none_right")
    assert sum(head[c] for c in classes) == head["episodes"] == figures["held_out_episodes"]
    assert f"| held out | {head['episodes']} |" in printed and f"| all | {len(usable)} |" in printed


def test_keeping_a_growing_recording_writes_each_episode_once(tmp_path):
    import gzip

    keep = load("episodes/keep")
    lines = EPISODES.read_text().splitlines()
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "earlier.jsonl.gz").write_bytes(gzip.compress(("\n".join(lines[:3]) + "\n").encode()))
    growing = tmp_path / "recording.jsonl"
    growing.write_text("\n".join(lines[:5]) + "\n" + lines[5][:100])  # the line being written is cut
    target = kept / "next.jsonl.gz"
    assert keep.main([str(growing), str(target)]) == 0
    assert [e.id for e in load_episodes([target])] == [json.loads(x)["id"] for x in lines[3:5]]
    growing.write_text("\n".join(lines[:7]) + "\n")  # rerun as it grows: the target is rewritten, not appended
    keep.main([str(growing), str(target)])
    assert [e.id for e in load_episodes([target])] == [json.loads(x)["id"] for x in lines[3:7]]
