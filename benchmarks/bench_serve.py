"""Bounded load test of ``hydra-vr serve`` on loopback: many clients, a scripted LLM, a real server.

Starts ``hydra-vr serve`` on 127.0.0.1 (a free port) with a scripted LLM in ViperGPT mode whose
one program is ``final_answer = 'yes'``, so an episode is a few milliseconds of real loop and
sandbox, and what is measured is the server: accepting a job (multipart parsing, checks, queue),
reading it back, the worker's own wrapping of an episode, and the SSE delivery of its result.

Each client submits ``POST /v1/ask``; when accepted it follows ``/v1/jobs/{id}/events`` to the
``result`` event and reads ``GET /v1/jobs/{id}``; a 429 is counted and the client retries after
0.1 s (keeping the pressure on rather than honouring Retry-After). Bounded: ``--requests``
submissions in all and ``--time-limit`` seconds; the server is stopped by its process group.
At the end every accepted job must be finished (done or failed): lost jobs are reported.

    .venv/bin/python benchmarks/bench_serve.py [--clients 50] [--requests 500] [--queue-size 64]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import yaml

REPO = Path(__file__).resolve().parents[1]
PROGRAM = "```python\nfinal_answer = 'yes'\n```"


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def server_ms(response: httpx.Response) -> float:
    found = re.search(r"dur=([0-9.]+)", response.headers.get("server-timing", ""))
    return float(found.group(1)) if found else float("nan")


def start_server(work: Path, concurrency: int, queue_size: int) -> tuple[subprocess.Popen, str]:
    config = work / "bench.yaml"
    config.write_text(yaml.safe_dump({"name": "bench-serve", "agent": {"mode": "vipergpt"},
                                      "llm": {"backend": "scripted", "options": {"rules": [["Instruction:", PROGRAM]]}}}))
    log = (work / "server.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "hydra_vr.cli.main", "serve", "--host", "127.0.0.1", "--port", "0",
                             "--config", str(config), "--concurrency", str(concurrency), "--queue-size", str(queue_size),
                             "--keep-jobs", "100000"],
                            cwd=work, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=log, stderr=log,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited: {(work / 'server.log').read_text()[-2000:]}")
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)/", (work / "server.log").read_text())
        if found:
            try:
                if httpx.get(found.group(1) + "/healthz", timeout=5).json()["ready_workers"] == concurrency:
                    return proc, found.group(1)
            except httpx.HTTPError:
                pass
        time.sleep(0.2)
    stop_server(proc)
    raise SystemExit("the server did not get ready in 120 s")


def stop_server(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)  # the server and its sandbox children: the group we started
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


class Load:
    def __init__(self, base: str, requests: int, deadline: float) -> None:
        self.base, self.deadline = base, deadline
        self.left = requests
        self.lock = threading.Lock()
        self.post_ms: list[float] = []
        self.get_ms: list[float] = []
        self.post_server_ms: list[float] = []  # Server-Timing: the server's own time
        self.get_server_ms: list[float] = []
        self.sse_lag_ms: list[float] = []
        self.accepted: list[str] = []
        self.refused = 0
        self.http_requests = 0
        self.errors: list[str] = []

    def take(self) -> bool:
        with self.lock:
            if self.left <= 0 or time.monotonic() > self.deadline:
                return False
            self.left -= 1
            return True

    def client(self) -> None:
        with httpx.Client(base_url=self.base, timeout=60) as http:
            while self.take():
                try:
                    self.one(http)
                except Exception as exc:  # reported, never hidden
                    with self.lock:
                        self.errors.append(f"{type(exc).__name__}: {exc}")

    def one(self, http: httpx.Client) -> None:
        t0 = time.perf_counter()
        response = http.post("/v1/ask", data={"query": "Is there a cup?", "sample": "coffee"})
        post_ms = (time.perf_counter() - t0) * 1000
        with self.lock:
            self.post_ms.append(post_ms)
            self.post_server_ms.append(server_ms(response))
            self.http_requests += 1
        if response.status_code == 429:
            with self.lock:
                self.refused += 1
            time.sleep(0.1)
            return
        response.raise_for_status()
        job_id = response.json()["id"]
        with self.lock:
            self.accepted.append(job_id)
        received = None
        with http.stream("GET", f"/v1/jobs/{job_id}/events") as stream:
            name = None
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: ") and name == "result":
                    received = time.time()
        t0 = time.perf_counter()
        response = http.get(f"/v1/jobs/{job_id}")
        job = response.json()
        get_ms = (time.perf_counter() - t0) * 1000
        with self.lock:
            self.get_ms.append(get_ms)
            self.get_server_ms.append(server_ms(response))
            self.http_requests += 2
            if received is not None and job.get("finished"):
                self.sse_lag_ms.append((received - job["finished"]) * 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=500, help="submissions in all (accepted or refused)")
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds; the load stops then")
    parser.add_argument("--queue-size", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        proc, base = start_server(Path(tmp), args.concurrency, args.queue_size)
        try:
            load = Load(base, args.requests, time.monotonic() + args.time_limit)
            t0 = time.perf_counter()
            threads = [threading.Thread(target=load.client, daemon=True) for _ in range(args.clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(args.time_limit + 60)
            wall = time.perf_counter() - t0
            with httpx.Client(base_url=base, timeout=30) as http:
                jobs = [http.get(f"/v1/jobs/{j}").json() for j in load.accepted]
                metrics = http.get("/metrics").text
        finally:
            stop_server(proc)

    unfinished = [j["id"] for j in jobs if j.get("status") not in ("done", "failed")]
    worker_ms = [((j["finished"] - j["started"]) - j["episode_seconds"]) * 1000 for j in jobs
                 if j.get("episode_seconds") is not None and j.get("started") and j.get("finished")]
    episode_ms = [j["episode_seconds"] * 1000 for j in jobs if j.get("episode_seconds") is not None]
    counters = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(hydra_vr_jobs_\w+?)(?:_total)? ([0-9.e+]+)$", metrics, re.M)}
    report = {
        "clients": args.clients, "submissions": len(load.post_ms), "wall_s": round(wall, 2),
        "http_requests": load.http_requests, "requests_per_s": round(load.http_requests / wall, 1),
        "accepted": len(load.accepted), "refused_429": load.refused,
        "jobs_per_s": round(len(load.accepted) / wall, 1),
        "done": sum(j.get("status") == "done" for j in jobs), "failed": sum(j.get("status") == "failed" for j in jobs),
        "lost_jobs": len(unfinished), "client_errors": len(load.errors),
        "post_ms_p50": round(pct(load.post_ms, 50), 2), "post_ms_p95": round(pct(load.post_ms, 95), 2),
        "get_ms_p50": round(pct(load.get_ms, 50), 2), "get_ms_p95": round(pct(load.get_ms, 95), 2),
        "post_server_ms_p50": round(pct(load.post_server_ms, 50), 2), "post_server_ms_p95": round(pct(load.post_server_ms, 95), 2),
        "get_server_ms_p50": round(pct(load.get_server_ms, 50), 2), "get_server_ms_p95": round(pct(load.get_server_ms, 95), 2),
        "worker_overhead_ms_p50": round(pct(worker_ms, 50), 2), "worker_overhead_ms_p95": round(pct(worker_ms, 95), 2),
        "sse_result_lag_ms_p50": round(pct(load.sse_lag_ms, 50), 2), "sse_result_lag_ms_p95": round(pct(load.sse_lag_ms, 95), 2),
        "episode_ms_median": round(statistics.median(episode_ms), 2) if episode_ms else None,
        "server_counters": counters,
    }
    print(json.dumps(report, indent=2))
    if load.errors:
        print("client errors (first 5):", *load.errors[:5], sep="\n  ")
    print(f"\n{report['submissions']} submissions by {args.clients} clients in {report['wall_s']} s: "
          f"{report['requests_per_s']} HTTP requests/s, {report['accepted']} jobs accepted, {report['refused_429']} refused (429), "
          f"{report['lost_jobs']} lost; {report['done']} done, {report['failed']} failed")
    print(f"p95 as the clients saw it: POST /v1/ask {report['post_ms_p95']} ms, GET job {report['get_ms_p95']} ms, "
          f"SSE result delivery {report['sse_result_lag_ms_p95']} ms")
    print(f"p95 inside the server (Server-Timing): POST /v1/ask {report['post_server_ms_p95']} ms, GET job "
          f"{report['get_server_ms_p95']} ms; worker's wrap around an episode {report['worker_overhead_ms_p95']} ms "
          f"(goal <= 20 ms); episode median {report['episode_ms_median']} ms")
    if unfinished:
        raise SystemExit(f"{len(unfinished)} accepted job(s) never finished: {unfinished[:5]}")


if __name__ == "__main__":
    main()
