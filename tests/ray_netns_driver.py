"""Runs INSIDE a network + PID namespace (see tests/test_ray_cluster.py): a two-node Ray cluster on
loopback, eval runs against it with faults injected, facts written as JSON for the test to check.

    unshare --net --pid --fork --mount-proc bash -c 'ip link set lo up && python tests/ray_netns_driver.py OUT'

Every process started here dies with the namespace's first process, whatever happens.
Scenarios, in order: a local reference run; a driver SIGKILLed mid-run then rerun; a poison
sample that kills its worker on every try (actor restarts, error after --max-tries); the worker
node killed mid-run (its process group and its raylet's workers); record on the surviving node; an actor no node can hold.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PORT = 6391
ADDRESS = f"127.0.0.1:{PORT}"
IMAGES = ("astronaut", "coffee", "chelsea", "motorcycle", "grace_hopper", "rocket")
PROGRAM = "```python\nfinal_answer = str(len(ImagePatch(image).find('person')))\n```"
PLAN = json.dumps({"instructions": [{"instruction": "Count the people", "probability": 1.0}], "answer": ""})
POISON_ID = "r03"


def cluster_env(tmp: Path) -> dict[str, str]:
    """The same auth mode and token for every node and driver; node death seen in about 1.5 s."""
    return {
        **os.environ,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": "hydra-vr-test-" + os.urandom(8).hex(),
        "RAY_health_check_period_ms": "500",
        "RAY_health_check_timeout_ms": "500",
        "RAY_health_check_failure_threshold": "3",
        "RAY_health_check_initial_delay_ms": "0",
        "RAY_memory_monitor_refresh_ms": "0",  # the shared CI machine's memory is not this test's
        "PYTHONUNBUFFERED": "1",
    }


def write_inputs(root: Path) -> tuple[Path, Path, list[str]]:
    rows = [{"id": f"r{i:02d}", "image": f"sample:{IMAGES[i % len(IMAGES)]}",  # packaged photos
             "question": f"How many people are there? ({i})", "answers": ["1"]} for i in range(12)]
    data = root / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = root / "cfg.yaml"
    cfg.write_text(json.dumps({"name": "scripted-ray", "agent": {"mode": "one_step", "max_steps": 1},
                               "llm": {"backend": "scripted", "options": {"rules": [["Instruction:", PROGRAM], ["Reply:", PLAN]]}}}))
    return data, cfg, [r["id"] for r in rows]


def eval_cmd(data: Path, cfg: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "hydra_vr.cli.main", "eval", "--dataset", "user", "--data-root", str(data),
            "--out", str(out), "--config", str(cfg), "--no-progress", *extra]


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def wait_lines(path: Path, n: int, proc: subprocess.Popen, timeout: float = 240) -> int:
    deadline = time.monotonic() + timeout
    while True:
        count = path.read_bytes().count(b"\n") if path.exists() else 0
        if count >= n or proc.poll() is not None:
            return count
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path}: fewer than {n} lines after {timeout} s")
        time.sleep(0.05)


class AddressWatch(threading.Thread):
    """Samples the namespace's TCP sockets: every local and remote IPv4/IPv6 address in use."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.seen: set[str] = set()
        self.stop = threading.Event()

    @staticmethod
    def _addr(hexaddr: str) -> str:
        ip = hexaddr.split(":")[0]
        raw = bytes.fromhex(ip)
        if len(raw) == 4:
            return socket.inet_ntop(socket.AF_INET, raw[::-1])
        words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
        return socket.inet_ntop(socket.AF_INET6, words)

    def sample(self) -> None:
        for name in ("/proc/net/tcp", "/proc/net/tcp6", "/proc/net/udp", "/proc/net/udp6"):
            for row in Path(name).read_text().splitlines()[1:]:
                local, remote = row.split()[1:3]
                self.seen.update({self._addr(local), self._addr(remote)})

    def run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            time.sleep(0.2)


class Node:
    """One `ray start --block` in its own process group, so it can be killed as a machine would die."""

    def __init__(self, env: dict[str, str], log: Path, *args: str) -> None:
        ray_bin = str(Path(sys.executable).with_name("ray"))
        self.proc = subprocess.Popen([ray_bin, "start", "--block", "--node-ip-address=127.0.0.1", "--num-cpus=1",
                                      "--object-store-memory=80000000", *args], env=env, start_new_session=True,
                                     stdout=log.open("wb"), stderr=subprocess.STDOUT)

    def raylet(self) -> int | None:
        for pid in _pids():
            if _pgid(pid) == self.proc.pid and _cmd(pid).split("\0")[0].endswith("/raylet"):
                return pid
        return None

    def kill(self) -> None:
        """SIGKILL the node's process group and the worker processes its raylet started (own groups)."""
        raylet = self.raylet()
        workers = [p for p in _pids() if raylet is not None and _ppid(p) == raylet]
        os.killpg(self.proc.pid, signal.SIGKILL)
        for pid in workers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(30)


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _stat(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return ["?", "0", "0"]


def _ppid(pid: int) -> int:
    return int(_stat(pid)[1])


def _pgid(pid: int) -> int:
    return int(_stat(pid)[2])


def _cmd(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return ""


def wait_nodes(env: dict[str, str], n: int, timeout: float = 120) -> tuple[float, list[str]]:
    """Seconds until ``n`` nodes are alive, and their IPs (checked from a short-lived driver)."""
    os.environ.update({k: env[k] for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")})
    import ray

    t0 = time.monotonic()
    while True:
        try:
            socket.create_connection(("127.0.0.1", PORT), 1).close()
            break
        except OSError:
            if time.monotonic() - t0 > timeout:
                raise
            time.sleep(0.2)
    ray.init(address=ADDRESS, log_to_driver=False, logging_level="ERROR")
    try:
        while True:
            nodes = [node for node in ray.nodes() if node["Alive"]]
            if len(nodes) >= n:
                return time.monotonic() - t0, [node["NodeManagerAddress"] for node in nodes]
            if time.monotonic() - t0 > timeout:
                raise TimeoutError(f"only {len(nodes)} of {n} Ray nodes came up")
            time.sleep(0.2)
    finally:
        ray.shutdown()


def poison_remote_evaluate(spec, dataset, traces, sample):  # pickled by value: defined in __main__
    if sample.id == POISON_ID:
        os._exit(17)  # the worker process dies, as a segfault in a native backend would kill it
    from hydra_vr.eval.ray_runner import remote_evaluate

    return remote_evaluate(spec, dataset, traces, sample)


def run_poison(data: Path, cfg: Path, out: Path, env: dict[str, str]) -> dict:
    """In this process: run_eval with the worker function swapped for one that dies on one sample."""
    os.environ.update({k: env[k] for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")})
    import hydra_vr.eval.ray_runner as ray_runner
    from hydra_vr.config import load_config
    from hydra_vr.datasets import load_dataset
    from hydra_vr.eval.runner import EvalSettings, run_eval
    from hydra_vr.eval.sample_eval import AgentSpec
    from hydra_vr.scale import RaySettings

    samples = load_dataset("user", data, None, 4)
    ray_runner.remote_evaluate = poison_remote_evaluate
    settings = RaySettings(address=ADDRESS, workers=2, max_tries=2, stall_timeout_s=120)
    outcome = run_eval(samples, out, EvalSettings(dataset="user", data_root=str(data), limit=4),
                       agent_spec=AgentSpec(load_config(cfg)), ray=settings)
    return {"evaluated": outcome.evaluated, "records": lines(out / "results.jsonl")}


def main(root: Path) -> None:
    facts: dict = {}
    watch = AddressWatch()
    watch.start()
    data, cfg, ids = write_inputs(root)
    facts["ids"] = ids
    env = cluster_env(root)
    # 1. The local reference (no Ray).
    local = subprocess.run(eval_cmd(data, cfg, root / "local"), env=env, capture_output=True, text=True, timeout=300)
    facts["local"] = {"rc": local.returncode, "stderr": local.stderr[-2000:], "records": lines(root / "local" / "results.jsonl")}
    # 2. Two nodes, one CPU each: one actor per node.
    temp = tempfile.mkdtemp(prefix="hvr", dir="/tmp")  # short: Ray's socket paths live under it
    head = Node(env, root / "head.log", "--head", f"--port={PORT}", "--include-dashboard=false", f"--temp-dir={temp}")
    worker = Node(env, root / "worker.log", f"--address={ADDRESS}", f"--temp-dir={temp}")
    facts["start_s"], facts["node_ips"] = wait_nodes(env, 2)
    try:
        # 3. A driver killed with SIGKILL after two results, then the same command again.
        run = root / "resume"
        cmd = eval_cmd(data, cfg, run, "--ray", ADDRESS, "--workers", "2")
        proc = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        facts["resume_lines_at_kill"] = wait_lines(run / "results.jsonl", 2, proc)
        facts["resume_killed_running"] = proc.poll() is None
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        facts["resume_before"] = (run / "results.jsonl").read_text()
        again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=400)
        facts["resume"] = {"rc": again.returncode, "stdout": again.stdout, "stderr": again.stderr[-3000:],
                           "after": (run / "results.jsonl").read_text(), "records": lines(run / "results.jsonl"),
                           "traces": sorted(p.name for p in (run / "traces").iterdir()),
                           "predictions": json.loads((run / "predictions" / "user_predictions.json").read_text())
                           if (run / "predictions" / "user_predictions.json").exists() else None}
        local_preds = root / "local" / "predictions" / "user_predictions.json"
        facts["local"]["predictions"] = json.loads(local_preds.read_text()) if local_preds.exists() else None
        # 4. A poison sample: its worker dies on every try; the actor restarts; error after max_tries.
        try:
            facts["poison"] = run_poison(data, cfg, root / "poison", env)
        except Exception as exc:  # reported, not raised: the other scenarios still run
            facts["poison"] = {"error": f"{type(exc).__name__}: {exc}"}
        # 5. The worker node dies mid-run: its samples are re-queued onto the head node's actor.
        run = root / "nodekill"
        proc = subprocess.Popen(eval_cmd(data, cfg, run, "--ray", ADDRESS, "--workers", "2"), env=env,
                                start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        facts["nodekill_lines_at_kill"] = wait_lines(run / "results.jsonl", 1, proc)
        facts["nodekill_killed_running"] = proc.poll() is None
        worker.kill()
        out, err = proc.communicate(timeout=400)
        facts["nodekill"] = {"rc": proc.returncode, "stdout": out, "stderr": err[-3000:],
                             "records": lines(run / "results.jsonl")}
        # 6. record: episodes made on the actors equal the local ones (epsilon choices seeded per sample).
        rcfg = root / "rcfg.yaml"
        rcfg.write_text(json.dumps({**json.loads(cfg.read_text()), "agent": {"mode": "no_rl", "max_steps": 1, "num_options": 2}}))
        facts["record"] = {}
        for name, extra in (("local", ()), ("ray", ("--ray", ADDRESS, "--workers", "2"))):
            out = root / f"episodes-{name}.jsonl"
            rec = subprocess.run([sys.executable, "-m", "hydra_vr.cli.main", "record", "--dataset", "user", "--data-root",
                                  str(data), "--limit", "4", "--out", str(out), "--config", str(rcfg), "--epsilon", "0.5",
                                  "--no-progress", *extra], env=env, capture_output=True, text=True, timeout=300)
            facts["record"][name] = {"rc": rec.returncode, "stderr": rec.stderr[-2000:], "episodes": lines(out)}
        # 7. An actor no node can hold (a GPU on a CPU cluster): refused before any sample is sent.
        gpu = subprocess.run(eval_cmd(data, cfg, root / "gpu", "--ray", ADDRESS, "--ray-gpus", "1"), env=env,
                             capture_output=True, text=True, timeout=120)
        facts["gpu"] = {"rc": gpu.returncode, "stderr": gpu.stderr[-2000:], "records": lines(root / "gpu" / "results.jsonl")}
    finally:
        watch.sample()
        watch.stop.set()
        facts["addresses"] = sorted(watch.seen)
        for node in (worker, head):
            if node.proc.poll() is None:
                node.kill()
        shutil.rmtree(temp, ignore_errors=True)
    (root / "facts.json").write_text(json.dumps(facts))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
