"""``hydra-vr serve``'s API through FastAPI's test client: the real loop, sandbox and embedded vision
tools with a scripted LLM (tests/serve_script.py), the job queue, SSE, uploads, auth, runs browser."""

from __future__ import annotations

import io
import json
import struct
import threading
import time
import zlib
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="needs the serve extra")

from fastapi.testclient import TestClient  # noqa: E402
from PIL import Image  # noqa: E402
from pydantic import ValidationError  # noqa: E402
from serve_script import make_eval_run, scripted_serve_config  # noqa: E402

from hydra_vr.agent.types import EpisodeResult  # noqa: E402
from hydra_vr.config import load_config  # noqa: E402
from hydra_vr.factory import build_agent  # noqa: E402
from hydra_vr.serve.app import create_app  # noqa: E402
from hydra_vr.serve.settings import ServeSettings  # noqa: E402

COUNT_Q = "How many people are in the picture?"


@pytest.fixture(scope="module")
def serve_config(tmp_path_factory) -> Path:
    return scripted_serve_config(tmp_path_factory.mktemp("serve") / "scripted.yaml")


@pytest.fixture
def make_client(serve_config, embedded_toolbox):
    """make_client(**settings, factory=None) -> a TestClient on a fresh app (workers started)."""

    def real_agent():  # as the server builds it, but sharing the session's loaded vision models
        return build_agent(load_config(serve_config), toolbox=embedded_toolbox)

    @contextmanager
    def make(factory=None, **settings):
        app = create_app(ServeSettings(config=str(serve_config), **settings), agent_factory=factory or real_agent)
        with TestClient(app) as client:
            yield client

    return make


def events_of(client: TestClient, job_id: str, headers: dict | None = None) -> list[tuple[int, str, dict]]:
    """(id, event, data) of a job's SSE stream, read until the server closes it."""
    out, block = [], {}
    with client.stream("GET", f"/v1/jobs/{job_id}/events", headers=headers or {}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if not line:
                if "data" in block:
                    out.append((int(block["id"]), block["event"], json.loads(block["data"])))
                block = {}
            elif not line.startswith(":"):
                key, _, value = line.partition(": ")
                block[key] = value
    return out


# A trace step as today's loop writes it or in the common step format (planner round under `extra`).
def options_of(step: dict) -> list[str]:
    options = step["options"] if "options" in step else step.get("extra", {}).get("options", [])
    return [o["instruction"] for o in options]


def choice_of(step: dict) -> int:
    return step["choice"] if "choice" in step else step.get("extra", {}).get("choice", -1)


def action_of(step: dict) -> str:
    return step.get("instruction") or step.get("action", "")


def observation_of(step: dict) -> str:
    return step.get("feedback") or step.get("observation", "")


def submit(client: TestClient, path: str = "/v1/ask", **form) -> str:
    response = client.post(path, data=form)
    assert response.status_code == 202, response.text
    return response.json()["id"]


def finished(client: TestClient, job_id: str, headers: dict | None = None) -> dict:
    events_of(client, job_id, headers)  # returns once the job has ended
    return client.get(f"/v1/jobs/{job_id}", headers=headers or {}).json()


def png_bytes(size=(64, 48), color=(200, 30, 30)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


def bomb_png(width: int = 100_000, height: int = 100_000) -> bytes:
    """A valid 1x1 PNG whose header claims ``width`` x ``height`` pixels (a few hundred bytes)."""
    data = bytearray(png_bytes((1, 1)))
    ihdr = 8 + 8  # signature, then the IHDR chunk's length and type
    data[ihdr: ihdr + 8] = struct.pack(">II", width, height)
    crc = zlib.crc32(bytes(data[ihdr - 4: ihdr + 13])) & 0xFFFFFFFF
    data[ihdr + 13: ihdr + 17] = struct.pack(">I", crc)
    return bytes(data)


# ------------------------------------------------------------------------------------ episodes


def test_ask_streams_each_step_in_order_then_the_result(make_client, photo):
    with make_client() as client:
        job_id = submit(client, query=COUNT_Q, sample="bus")
        events = events_of(client, job_id)
        assert [e[1] for e in events] == ["queued", "running", "step", "step", "result"]
        assert [e[0] for e in events] == list(range(5))  # ids count from 0, one per event
        first, second = events[2][2], events[3][2]
        assert (first["index"], second["index"]) == (0, 1)
        assert options_of(first["step"]) == ["Find the people", "Find the bus", "Count everything"]
        assert choice_of(first["step"]) == 0 and action_of(first["step"]) == "Find the people"
        people = [v for v in first["step"]["result"]["variables"] if v["name"] == "people"][0]
        assert len(people["boxes"]) >= 2  # the real detector found the people on the bus photo
        assert "find('person')" in observation_of(first["step"])
        assert second["step"]["attempts"][-1]["code"] == "final_answer = str(len(people))"
        result = events[4][2]
        assert result["status"] == "done" and result["error"] is None
        assert result["result"]["answer"] == str(len(people["boxes"]))

        job = client.get(f"/v1/jobs/{job_id}").json()
        assert job["status"] == "done" and job["answer"] == result["result"]["answer"]
        assert job["image"] == "sample:bus" and len(job["trace"]["steps"]) == 2
        assert "/" not in job["trace"]["image"]  # the server's file paths are not shown
        image = client.get(job["image_url"])
        assert image.status_code == 200 and image.content == photo("bus").read_bytes()

        # A late subscriber gets the whole history; Last-Event-ID resumes after that event.
        assert [e[1] for e in events_of(client, job_id)] == ["queued", "running", "step", "step", "result"]
        resumed = events_of(client, job_id, headers={"Last-Event-ID": "2"})
        assert [(e[0], e[1]) for e in resumed] == [(3, "step"), (4, "result")]


def test_ground_returns_the_box_of_the_bus(make_client):
    with make_client() as client:
        job_id = submit(client, "/v1/ground", query="the bus", sample="sample:bus")
        events = events_of(client, job_id)
        assert [e[1] for e in events] == ["queued", "running", "step", "result"]
        job = client.get(f"/v1/jobs/{job_id}").json()
        assert job["status"] == "done" and job["task"] == "grounding"
        [[x1, y1, x2, y2]] = job["boxes"]
        assert 0 <= x1 < x2 <= 810 and 0 <= y1 < y2 <= 1080
        assert (x2 - x1) > 600  # the bus spans most of the photo's width
        assert events[2][2]["step"]["result"]["final_answer"]["box"] == job["boxes"][0]


def test_strategy_and_mode_are_checked_and_passed_to_the_loop(make_client):
    with make_client() as client:
        viper = finished(client, submit(client, query=COUNT_Q, sample="bus", strategy="vipergpt"))
        assert viper["status"] == "done" and viper["strategy"] == "vipergpt"
        assert viper["trace"]["strategy"] == "vipergpt" and len(viper["trace"]["steps"]) == 1
        assert options_of(viper["trace"]["steps"][0]) == []  # no planner: one program from the query
        one = finished(client, submit(client, query=COUNT_Q, sample="bus", mode="one_step"))
        assert one["trace"]["mode"] == "one_step"
        default = finished(client, submit(client, query=COUNT_Q, sample="bus"))
        assert default["trace"]["mode"] == "no_rl"  # the variant did not change the base agent
        old_name = finished(client, submit(client, query=COUNT_Q, sample="bus", mode="vipergpt"))
        assert old_name["trace"]["strategy"] == "vipergpt"  # mode vipergpt is the strategy's old name
        listed = client.get("/v1/strategies").json()["strategies"]
        assert {"hydra", "vipergpt"} <= {s["name"] for s in listed} and all(s["summary"] for s in listed)
        for form, message in [({"strategy": "nope"}, "strategy 'nope' is not available"),
                              ({"mode": "turbo"}, "unknown mode 'turbo'"),
                              ({"strategy": "vipergpt", "mode": "no_rl"}, "contradicts")]:
            response = client.post("/v1/ask", data={"query": COUNT_Q, "sample": "bus", **form})
            assert response.status_code == 400 and message in response.json()["detail"]


def test_a_failing_job_is_reported_and_the_next_one_succeeds(make_client):
    with make_client() as client:
        bad = submit(client, query="Will it explode?", sample="bus")
        good = submit(client, query=COUNT_Q, sample="bus")
        failed = finished(client, bad)
        assert failed["status"] == "failed" and "ran out of replies" in failed["error"]
        assert finished(client, good)["status"] == "done"
        metrics = client.get("/metrics").text
        assert "hydra_vr_jobs_failed_total 1.0" in metrics and "hydra_vr_jobs_done_total 1.0" in metrics
        assert "hydra_vr_episode_seconds_count 2.0" in metrics
        assert client.get("/healthz").json()["jobs"] == {"queued": 0, "running": 0, "done": 1, "failed": 1}


def test_an_agent_that_cannot_be_built_fails_jobs_but_not_the_server(make_client):
    def broken():
        raise RuntimeError("model file missing")

    with make_client(factory=broken) as client:
        job = finished(client, submit(client, query=COUNT_Q, sample="bus"))
        assert job["status"] == "failed" and "could not be built: RuntimeError: model file missing" in job["error"]
        health = client.get("/healthz").json()
        assert health["ready_workers"] == 0 and "model file missing" in health["worker_errors"][-1]


# --------------------------------------------------------------------------------- the queue


class BlockingAgent:
    """Holds every episode until ``release`` is set: jobs pile up in the queue meanwhile."""

    def __init__(self, release: threading.Event) -> None:
        self.release = release
        self.observer = None

    def run(self, image_path, query, task="vqa"):
        assert self.release.wait(60), "the test never released the episode"
        return EpisodeResult(query=query, task=task, image=image_path, mode="no_rl", answer=f"ok {query}", boxes=[], steps=[])


def test_a_full_queue_answers_429_and_every_accepted_job_finishes(make_client):
    release = threading.Event()
    with make_client(factory=lambda: BlockingAgent(release), queue_size=2) as client:
        first = submit(client, query="q0", sample="bus")
        deadline = time.monotonic() + 30
        while client.get(f"/v1/jobs/{first}").json()["status"] != "running":  # the worker holds it
            assert time.monotonic() < deadline
            time.sleep(0.01)
        queued = [submit(client, query=f"q{i}", sample="bus") for i in (1, 2)]
        refused = client.post("/v1/ask", data={"query": "q3", "sample": "bus"})
        assert refused.status_code == 429 and "queue is full" in refused.json()["detail"]
        assert int(refused.headers["Retry-After"]) >= 1
        assert "hydra_vr_jobs_queued 2.0" in client.get("/metrics").text
        release.set()
        answers = [finished(client, j)["answer"] for j in [first, *queued]]
        assert answers == ["ok q0", "ok q1", "ok q2"]
        metrics = client.get("/metrics").text
        assert "hydra_vr_jobs_rejected_total 1.0" in metrics and "hydra_vr_jobs_done_total 3.0" in metrics


def test_finished_jobs_are_kept_up_to_the_limit_and_their_uploads_removed(make_client, tmp_path):
    release = threading.Event()
    release.set()
    with make_client(factory=lambda: BlockingAgent(release), keep_jobs=2, work_dir=tmp_path) as client:
        ids = []
        for i in range(3):
            response = client.post("/v1/ask", data={"query": f"q{i}"}, files={"image": ("x.png", png_bytes(), "image/png")})
            ids.append(response.json()["id"])
            finished(client, ids[-1])
        assert client.get(f"/v1/jobs/{ids[0]}").status_code == 404  # the oldest finished job was dropped
        assert [client.get(f"/v1/jobs/{j}").json()["answer"] for j in ids[1:]] == ["ok q1", "ok q2"]
        assert len(list((tmp_path / "uploads").iterdir())) == 2  # its upload went with it


# ------------------------------------------------------------------------------ safety checks


def test_a_token_is_required_when_set_and_off_loopback(make_client, serve_config):
    with pytest.raises(ValidationError, match="set a token"):
        ServeSettings(host="0.0.0.0", config=str(serve_config))
    assert ServeSettings(host="0.0.0.0", token="t", config=str(serve_config)).token == "t"
    assert ServeSettings(host="::1", config=str(serve_config)).token is None

    with make_client(token="s3cret") as client:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret"}):
            response = client.get("/v1/samples", headers=headers)
            assert response.status_code == 401 and response.headers["WWW-Authenticate"] == "Bearer"
        assert client.post("/v1/ask", data={"query": COUNT_Q, "sample": "bus"}).status_code == 401
        assert client.get("/metrics").status_code == 401 and client.get("/v1/runs").status_code == 401
        auth = {"Authorization": "Bearer s3cret"}
        assert client.get("/healthz", headers=auth).json()["jobs"]["queued"] == 0  # the refused POST made no job
        assert "bus" in client.get("/v1/samples", headers=auth).json()["samples"]
        assert client.get("/").status_code == 200 and "hydra-vr" in client.get("/").text  # the page shell holds no data
        job = client.post("/v1/ask", data={"query": COUNT_Q, "sample": "bus"}, headers=auth)
        assert job.status_code == 202
        assert finished(client, job.json()["id"], headers=auth)["status"] == "done"


def test_bad_uploads_are_refused_with_a_clear_message(make_client):
    with make_client(max_upload_mb=0.05) as client:
        def upload(data: bytes, **form):
            return client.post("/v1/ask", data={"query": COUNT_Q, **form}, files={"image": ("x.png", data, "image/png")})

        big = upload(b"\x89PNG" + b"\0" * 200_000)  # refused from its Content-Length, before parsing
        assert big.status_code == 413 and "uploads are limited to 51 KB" in big.json()["detail"]
        over = upload(b"\x89PNG" + b"\0" * 60_000)  # within the form's slack: refused by the image check
        assert over.status_code == 413 and "the upload is 59 KB; the limit is 51 KB" in over.json()["detail"]
        text = upload(b"this is not an image, it is text")
        assert text.status_code == 400 and "not an image" in text.json()["detail"]
        bomb = upload(bomb_png(100_000, 100_000))  # beyond twice PIL's limit: PIL refuses it at open
        assert bomb.status_code == 400 and "decompression bomb" in bomb.json()["detail"]
        large = upload(bomb_png(10_000, 10_000))  # beyond PIL's limit, which the server applies itself
        assert large.status_code == 400 and "10000 x 10000 pixels; the limit is 89478485" in large.json()["detail"]
        truncated = upload(png_bytes()[:60])
        assert truncated.status_code == 400
        both = upload(png_bytes(), sample="bus")
        assert both.status_code == 400 and "exactly one image" in both.json()["detail"]
        assert client.post("/v1/ask", data={"query": COUNT_Q}).status_code == 400  # no image at all
        assert client.post("/v1/ask", data={"query": "  ", "sample": "bus"}).json()["detail"] == "the query is empty"
        unknown = client.post("/v1/ask", data={"query": COUNT_Q, "sample": "../../etc/passwd"})
        assert unknown.status_code == 400 and "unknown sample" in unknown.json()["detail"]
        chunked = client.post("/v1/ask", content=iter([b"--x\r\n"]), headers={"Content-Type": "multipart/form-data; boundary=x"})
        assert chunked.status_code == 411
        assert client.get("/healthz").json()["jobs"] == {"queued": 0, "running": 0, "done": 0, "failed": 0}

        ok = upload(png_bytes())  # a plain red picture: no person found, and the answer says so
        assert ok.status_code == 202
        job = finished(client, ok.json()["id"])
        assert job["status"] == "done" and job["answer"] == "0" and job["image"] == "upload"


# ------------------------------------------------------------------------------ runs browser


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory, serve_config) -> Path:
    root = tmp_path_factory.mktemp("runs")
    make_eval_run(root / "small", serve_config)
    outside = tmp_path_factory.mktemp("outside")
    make_eval_run(outside / "secret", serve_config)
    (root / "escape").symlink_to(outside / "secret")  # a link out of the runs folder
    (root / "not-a-run").mkdir()
    return root


def test_runs_browser_lists_reports_filters_and_pages(make_client, runs_dir):
    with make_client(runs_dir=runs_dir) as client:
        runs = client.get("/v1/runs").json()["runs"]
        assert [r["name"] for r in runs] == ["small"]  # the symlink out and the empty folder are not runs
        assert runs[0]["n"] == 3 and runs[0]["dataset"] == "user"
        report = client.get("/v1/runs/small").json()
        assert report["report"]["n"] == 3 and report["built_from_results"] is False
        assert report["markdown"].startswith("# Evaluation")

        wrong = client.get("/v1/runs/small/samples", params={"correct": "false"}).json()
        right = client.get("/v1/runs/small/samples", params={"correct": "true"}).json()
        assert [s["id"] for s in wrong["items"]] == ["wrong"]
        assert sorted(s["id"] for s in right["items"]) == ["bus-box", "count"]
        assert all(s["correct"] for s in right["items"]) and not wrong["items"][0]["correct"]
        found = client.get("/v1/runs/small/samples", params={"q": "BUS"}).json()
        assert [s["id"] for s in found["items"]] == ["bus-box"]
        page = client.get("/v1/runs/small/samples", params={"offset": 1, "limit": 1}).json()
        assert page["total"] == 3 and [s["id"] for s in page["items"]] == ["bus-box"]

        sample = client.get("/v1/runs/small/samples/bus-box").json()
        assert sample["record"]["gt"]["box"] == [17.0, 230.0, 800.0, 740.0]
        assert sample["trace"]["query"] == "the bus" and len(sample["trace"]["steps"]) == 1
        image = client.get("/v1/runs/small/samples/bus-box/image")
        assert image.status_code == 200 and Image.open(io.BytesIO(image.content)).size == (810, 1080)
        assert client.get("/v1/runs/small/samples/nope").status_code == 404


def test_runs_browser_refuses_names_outside_the_runs_folder(make_client, runs_dir):
    with make_client(runs_dir=runs_dir) as client:
        for path in ("/v1/runs/%2E%2E", "/v1/runs/..%2F..%2Fetc", "/v1/runs/.hidden", "/v1/runs/escape",
                     "/v1/runs/%2E%2E/samples", "/v1/runs/escape/samples/count"):
            response = client.get(path)
            assert response.status_code in (400, 404), path
            assert "secret" not in response.text
        assert "outside the runs folder" in client.get("/v1/runs/escape").json()["detail"]
        assert "bad run name" in client.get("/v1/runs/%2E%2E").json()["detail"]
        assert client.get("/v1/runs/not-a-run").status_code == 404

        # A hand-edited results file pointing a trace out of the run is not followed.
        results = runs_dir / "small" / "results.jsonl"
        original = results.read_text()
        try:
            records = [json.loads(line) for line in original.splitlines()]
            records[0]["trace"] = "../../outside/secret/traces/count.json"
            results.write_text("".join(json.dumps(r) + "\n" for r in records))
            assert client.get(f"/v1/runs/small/samples/{records[0]['id']}").json()["trace"] is None
        finally:
            results.write_text(original)


def test_without_a_runs_folder_the_browser_is_empty(make_client):
    with make_client() as client:
        assert client.get("/v1/runs").json() == {"runs": []}
        assert "no runs folder" in client.get("/v1/runs/small").json()["detail"]


def test_openapi_page_is_served_without_a_cdn(make_client):
    with make_client(token="s3cret") as client:  # the API description is public, its data is not
        docs = client.get("/docs")
        assert docs.status_code == 200 and "/static-docs/swagger-ui-bundle.js" in docs.text
        assert "cdn" not in docs.text.lower()
        assert client.get("/static-docs/swagger-ui-bundle.js").status_code == 200
        paths = client.get("/openapi.json").json()["paths"]
        assert {"/v1/ask", "/v1/ground", "/v1/jobs/{job_id}", "/v1/jobs/{job_id}/events", "/v1/runs",
                "/v1/runs/{name}/samples/{sample_id}", "/healthz", "/metrics"} <= set(paths)


def test_cli_refuses_an_open_address_without_a_token(serve_config, tmp_path):
    from typer.testing import CliRunner

    from hydra_vr.cli.main import app

    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--config", str(serve_config)], env={"HYDRA_VR_TOKEN": ""})
    assert result.exit_code == 2 and "set a token" in result.output
    result = CliRunner().invoke(app, ["serve", "--runs-dir", str(tmp_path / "missing"), "--config", str(serve_config)])
    assert result.exit_code == 2 and "no such folder" in result.output
    result = CliRunner().invoke(app, ["serve", "--config", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2 and "config file not found" in result.output


def test_a_request_naming_no_strategy_runs_the_server_configs(serve_config, embedded_toolbox, tmp_path):
    import yaml

    data = yaml.safe_load(serve_config.read_text())
    data.setdefault("agent", {})["strategy"] = "vipergpt"
    config = tmp_path / "vipergpt.yaml"
    config.write_text(yaml.safe_dump(data))
    app = create_app(ServeSettings(config=str(config)), agent_factory=lambda: build_agent(load_config(config), toolbox=embedded_toolbox))
    with TestClient(app) as client:
        job = client.post("/v1/ask", data={"query": "Is there a cup?", "sample": "coffee"}).json()
        assert client.get(f"/v1/jobs/{job['id']}").json()["strategy"] == "vipergpt"
        named = client.post("/v1/ask", data={"query": "Is there a cup?", "sample": "coffee", "strategy": "hydra"}).json()
        assert client.get(f"/v1/jobs/{named['id']}").json()["strategy"] == "hydra"  # a named one still wins
