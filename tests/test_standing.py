"""benchmarks/real_photos/standing.py: each question's newest kept answer, runs ordered by the commit they ran."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.benchmark_scripts import ROOT, load


def _standing():
    return load("real_photos/standing")


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env).stdout.strip()


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return _git(repo, "rev-parse", "--short=7", "HEAD")


def _summary(folder: Path, name: str, commit: str, label: str, scores: dict[str, float]) -> None:
    questions = [{"id": qid, "task": "vqa", "score": s, "prediction": "x"} for qid, s in scores.items()]
    (folder / f"{name}.json").write_text(json.dumps({"commit": commit, "label": label, "dataset": "user", "questions": questions}))


def test_a_before_rerun_summarised_later_does_not_displace_the_after_run_and_reverted_code_ranks_last(tmp_path: Path) -> None:
    standing = _standing()
    repo = tmp_path / "repo"
    sums = repo / "photos" / "summaries"
    sums.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    rows = [{"id": "kite-1", "split": "test", "category": "color", "question": "q"},
            {"id": "kite-2", "split": "test", "category": "count", "question": "q"},
            {"id": "lamp-1", "split": "dev", "category": "yesno", "question": "q"},
            {"id": "lamp-g", "split": "test", "box": [0, 0, 1, 1], "question": "the lamp"}]
    (repo / "photos" / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    old = _commit(repo, "old code")
    _summary(sums, "a-baseline", old, "no_rl", {"kite-1": 0.0, "kite-2": 1.0, "lamp-1": 1.0, "lamp-g": 0.0})
    _commit(repo, "baseline summarised")
    new = _commit(repo, "a change that touches kite-1")
    _summary(sums, "b-after", new, "no_rl", {"kite-1": 1.0})
    # the "before" rerun of the touched question at the old commit, summarised after the "after" run,
    # with a name that sorts last
    _summary(sums, "z-before", old, "no_rl", {"kite-1": 0.0})
    _commit(repo, "after and before summarised")
    tried = _commit(repo, "a change tried on lamp-g and kite-2")
    _summary(sums, "c-tried", tried, "no_rl", {"lamp-g": 1.0, "kite-2": 0.0})
    _summary(sums, "c-tried-other", tried, "vipergpt", {"kite-1": 0.0})
    reverting = _commit(repo, "revert it")
    (repo / "photos" / "reverted.txt").write_text(f"# reverted\n{tried} {reverting} a change tried\n")
    _commit(repo, "reverted.txt")

    out = {(s.label, s.split): s for s in standing.standings(repo / "photos" / "questions.jsonl", sums, ["no_rl", "vipergpt"])}
    test = out["no_rl", "test"]
    assert test.vqa == {"kite-1": 1.0, "kite-2": 1.0}  # the after run's answer; the reverted run's ranks below the baseline
    assert test.boxes == {"lamp-g": 0.0} and test.from_reverted == 0
    assert out["no_rl", "dev"].vqa == {"lamp-1": 1.0}
    # a question only reverted code answered still stands, counted as such
    assert out["vipergpt", "test"].vqa == {"kite-1": 0.0} and out["vipergpt", "test"].from_reverted == 1

    (repo / "photos" / "reverted.txt").unlink()
    unreverted = {(s.label, s.split): s for s in standing.standings(repo / "photos" / "questions.jsonl", sums, ["no_rl"])}
    assert unreverted["no_rl", "test"].vqa == {"kite-1": 1.0, "kite-2": 0.0}
    assert unreverted["no_rl", "test"].boxes == {"lamp-g": 1.0}


def test_the_script_prints_the_standing_of_the_kept_summaries() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "real_photos" / "standing.py"), "--label", "no_rl"],
                         capture_output=True, text=True, check=True).stdout
    assert "no_rl      dev   VQA" in out and "no_rl      test  VQA" in out


def test_outside_a_git_checkout_the_names_order_the_runs(tmp_path: Path) -> None:
    standing = _standing()
    sums = tmp_path / "summaries"
    sums.mkdir()
    (tmp_path / "questions.jsonl").write_text(json.dumps({"id": "cup-1", "split": "dev", "category": "count"}) + "\n")
    _summary(sums, "a-first", "1234567", "no_rl", {"cup-1": 0.0})
    _summary(sums, "b-second", "89abcde", "no_rl", {"cup-1": 1.0})
    out = {(s.label, s.split): s for s in standing.standings(tmp_path / "questions.jsonl", sums, ["no_rl"])}
    assert out["no_rl", "dev"].vqa == {"cup-1": 1.0}
