"""eval --ray on a real two-node Ray cluster, inside a network namespace that has only loopback.

The cluster, the drivers and the faults run in tests/ray_netns_driver.py under
``unshare --net --pid --fork`` (root): no packet can leave the machine, and every process started
there dies with the namespace. The scenarios run once per module (about a minute) and each test
checks one of their outcomes. Needs the ``ray`` extra, root, ``unshare`` and ``ip``; skipped with
the reason otherwise. The CLI checks at the bottom need no cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hydra_vr.cli.main import app

REPO = Path(__file__).resolve().parents[1]
DRIVER = Path(__file__).with_name("ray_netns_driver.py")
LOOPBACK = {"127.0.0.1", "::ffff:127.0.0.1", "::1"}
WILDCARD = {"0.0.0.0", "::"}  # listening sockets and unconnected peers, not traffic

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'hydra-vr[ray]')")


def _namespace_problem() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create a network namespace (unshare --net)"
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            return f"needs `{tool}` (util-linux / iproute2) for the loopback-only network namespace"
    probe = subprocess.run(["unshare", "--net", "--pid", "--fork", "--mount-proc", "ip", "link", "set", "lo", "up"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot create a network + PID namespace here: {probe.stderr.strip()[:200]}"
    return None


@pytest.fixture(scope="module")
def facts(tmp_path_factory) -> dict:
    problem = _namespace_problem()
    if problem:
        pytest.skip(problem)
    root = tmp_path_factory.mktemp("ray")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    script = f"ip link set lo up && {sys.executable} {DRIVER} {root}"
    # --kill-child: if this test times out, the namespace's first process and so every Ray process go too.
    done = subprocess.run(["unshare", "--net", "--pid", "--fork", "--kill-child", "--mount-proc", "bash", "-c", script],
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0 and (root / "facts.json").is_file(), done.stdout[-3000:] + done.stderr[-5000:]
    return json.loads((root / "facts.json").read_text())


def _by_id(records: list[dict]) -> dict[str, dict]:
    return {r["id"]: r for r in records}


def _predictions(records: list[dict]) -> dict[str, object]:
    return {r["id"]: (r["prediction"], r["boxes"], r["score"]) for r in records}


def test_cluster_uses_loopback_only(facts):
    assert facts["node_ips"] == ["127.0.0.1", "127.0.0.1"]
    used = set(facts["addresses"]) - WILDCARD
    assert used and used <= LOOPBACK, f"addresses other than loopback in use: {used - LOOPBACK}"


def test_local_reference_run(facts):
    local = facts["local"]
    assert local["rc"] == 0, local["stderr"]
    assert [r["id"] for r in local["records"]] == facts["ids"]
    assert {r["prediction"] for r in local["records"]} == {"0", "1"}  # the real detector counted people
    assert not any(r["error"] for r in local["records"])


def test_driver_killed_then_rerun_resumes_exactly_once(facts):
    assert facts["resume_killed_running"] and 2 <= facts["resume_lines_at_kill"] < len(facts["ids"]), \
        "the run finished before the kill: the test proves nothing"
    run = facts["resume"]
    assert run["rc"] == 0, run["stderr"]
    before = facts["resume_before"]
    assert run["after"].startswith(before[: before.rfind("\n") + 1])  # finished lines kept as written
    ids = [r["id"] for r in run["records"]]
    assert sorted(ids) == sorted(facts["ids"]) and len(ids) == len(set(ids))
    assert f"{len(facts['ids'])} samples: " in run["stdout"] and "evaluated now" in run["stdout"]
    assert _predictions(run["records"]) == _predictions(facts["local"]["records"])
    assert sorted(run["predictions"], key=lambda p: p["id"]) == sorted(facts["local"]["predictions"], key=lambda p: p["id"])
    # The traces written on the workers' side came back to the driver's run directory.
    assert run["traces"] == sorted(Path(r["trace"]).name for r in run["records"])


def test_node_killed_mid_run_requeues_and_matches_local(facts):
    assert facts["nodekill_killed_running"] and facts["nodekill_lines_at_kill"] < len(facts["ids"])
    run = facts["nodekill"]
    assert run["rc"] == 0, run["stderr"]
    assert "lost (" in run["stderr"] and "re-queued" in run["stderr"]  # the dead node's samples went back
    ids = [r["id"] for r in run["records"]]
    assert sorted(ids) == sorted(facts["ids"]) and len(ids) == len(set(ids))
    assert _predictions(run["records"]) == _predictions(facts["local"]["records"])


def test_poison_sample_is_an_error_after_max_tries_and_the_rest_finish(facts):
    poison = facts["poison"]
    assert "error" not in poison, poison.get("error")
    by_id = _by_id(poison["records"])
    assert sorted(by_id) == facts["ids"][:4] and len(poison["records"]) == 4
    bad = by_id["r03"]
    assert bad["crashed"] and bad["prediction"] is None and bad["score"] == 0.0
    assert "worker died 2 time(s)" in bad["error"] and "max_tries=2" in bad["error"]
    local = _by_id(facts["local"]["records"])
    for sid in ("r00", "r01", "r02"):  # the restarted actors finished the others
        assert by_id[sid]["prediction"] == local[sid]["prediction"] and not by_id[sid]["error"]


def test_record_on_ray_gives_the_local_episodes(facts):
    runs = facts["record"]
    for run in runs.values():
        assert run["rc"] == 0, run["stderr"]

    def episodes(run: dict) -> dict[str, dict]:
        for ep in run["episodes"]:
            ep["result"].pop("seconds")  # wall time, the one field that may differ
        return _by_id(run["episodes"])

    local, ray_run = episodes(runs["local"]), episodes(runs["ray"])
    assert sorted(ray_run) == facts["ids"][:4] and len(runs["ray"]["episodes"]) == 4
    assert ray_run == local


def test_actor_no_node_can_hold_is_refused_up_front(facts):
    gpu = facts["gpu"]
    assert gpu["rc"] == 3 and "no node of this cluster can hold one worker actor" in gpu["stderr"]
    assert "'GPU': 1.0" in gpu["stderr"] and gpu["records"] == []


# ------------------------------------------------------------------------------------------------
# No cluster needed
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def user_file(tmp_path, photo) -> Path:
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"id": "a", "image": str(photo("astronaut")), "question": "Who is it?", "answers": ["x"]}) + "\n")
    return data


def test_unreachable_address_is_a_clear_error(tmp_path, user_file):
    result = CliRunner().invoke(app, ["eval", "--dataset", "user", "--data-root", str(user_file), "--out", str(tmp_path / "r"),
                                      "--ray", "127.0.0.1:1", "--no-progress"])
    assert result.exit_code == 3, result.output
    assert "cannot reach the Ray cluster at 127.0.0.1:1" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "r" / "results.jsonl").exists()


def test_empty_dataset_is_a_clear_error_without_contacting_the_cluster(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = CliRunner().invoke(app, ["eval", "--dataset", "user", "--data-root", str(empty), "--out", str(tmp_path / "r"),
                                      "--ray", "127.0.0.1:1", "--no-progress"])
    assert result.exit_code == 2 and "selects no samples" in result.output, result.output
    assert "cannot reach" not in result.output


def test_bad_ray_options_are_refused(tmp_path, user_file):
    base = ["eval", "--dataset", "user", "--data-root", str(user_file), "--out", str(tmp_path / "r"), "--ray", "auto"]
    result = CliRunner().invoke(app, [*base, "--ray-resource", "big"])
    assert result.exit_code == 2 and "must look like name=amount" in result.output
    result = CliRunner().invoke(app, [*base[:-1], "nohost"])
    assert result.exit_code == 3 and "must be auto, local, HOST:PORT" in result.output
