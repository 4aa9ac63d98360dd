"""The web page in a real browser: Debian's chromium driven by playwright, against a real
``hydra-vr serve`` process on a free loopback port with the scripted LLM (tests/serve_script.py)
and the real embedded vision tools. Screenshots are written to the test's tmp dir."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from serve_script import make_eval_run, scripted_serve_config

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
REPO = Path(__file__).resolve().parents[1]
TIMEOUT_MS = 60_000  # the first episode waits for the server's models to load
# The server runs with a token, so the page's own path for it is exercised too: the token is read
# from /?token=..., then every fetch (JSON, images, the SSE stream) carries it as a bearer header.
TOKEN = "browser-test-token"


def _require_browser() -> None:
    missing = []
    try:
        import fastapi  # noqa: F401
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        missing.append(str(exc))
    if not CHROMIUM.is_file():
        missing.append(f"{CHROMIUM} is not installed")
    if missing:
        if os.environ.get("CI"):  # scripts/install.sh --dev installs them: missing is a failure there
            pytest.fail("; ".join(missing))
        pytest.skip("; ".join(missing))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real ``hydra-vr serve`` on port 0 (the server prints the port it got); stopped by its pid."""
    _require_browser()
    root = tmp_path_factory.mktemp("serve-browser")
    config = scripted_serve_config(root / "scripted.yaml")
    runs = root / "runs"
    make_eval_run(runs / "small", config)
    log = (root / "server.log").open("w+")
    proc = subprocess.Popen([sys.executable, "-m", "hydra_vr.cli.main", "serve", "--host", "127.0.0.1", "--port", "0",
                             "--config", str(config), "--runs-dir", str(runs), "--token", TOKEN],
                            cwd=root, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=log, stderr=log,
                            start_new_session=True)
    try:
        base = _wait_until_ready(proc, root / "server.log")
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server and its sandbox child, nothing else
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        log.close()


def _wait_until_ready(proc: subprocess.Popen, log: Path) -> str:
    deadline = time.monotonic() + 120
    base = None
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the server exited: {log.read_text()[-2000:]}"
        if base is None:
            found = re.search(r"listening on (http://127\.0\.0\.1:\d+)/", log.read_text())
            base = found.group(1) if found else None
        if base is not None:
            request = urllib.request.Request(f"{base}/healthz", headers={"Authorization": f"Bearer {TOKEN}"})
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    if json.load(response)["ready_workers"] == 1:  # the worker has loaded its models
                        return base
            except OSError:  # still starting
                pass
        time.sleep(0.2)
    raise AssertionError(f"the server did not get ready: {log.read_text()[-2000:]}")


@pytest.fixture
def page(tmp_path, server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1360, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)

        def offline(route):  # the page must work with no network beyond the server: nothing else is fetched
            if route.request.url.startswith(server + "/") or route.request.url.startswith("blob:"):
                route.continue_()
            else:
                errors.append(f"fetched from outside: {route.request.url}")
                route.abort()

        context.route("**/*", offline)
        try:
            yield page
            assert errors == [], errors  # no script error, no failed request
        finally:
            context.close()


def test_ask_and_ground_show_steps_boxes_and_answer(server, page, tmp_path):
    page.goto(f"{server}/?token={TOKEN}")
    page.wait_for_selector("#sample option[value=bus]", state="attached")
    assert "token" not in page.url  # kept in the tab's session storage, not in the address bar
    page.select_option("#sample", "bus")
    page.fill("#query", "How many people are in the picture?")
    page.click("#send")
    page.wait_for_selector("#steps .step >> nth=1")  # both steps streamed in
    page.wait_for_selector("#answer:not([hidden]) #answer-text")
    answer = page.inner_text("#answer-text")
    assert re.fullmatch(r"\d+", answer) and int(answer) >= 2
    steps = page.locator("#steps .step")
    assert steps.count() == 2
    first = steps.nth(0)
    assert first.locator(".options li").count() == 3
    assert "Find the people" in first.locator(".options li.chosen").inner_text()  # the choice is highlighted
    assert 'find("person")' in first.locator("pre.code").inner_text()
    assert "find('person')" in first.inner_text()  # the textualized feedback
    boxes = page.locator("#ask-boxes rect.box")
    assert boxes.count() == int(answer)  # one box per person found, drawn over the image
    assert float(boxes.first.get_attribute("width")) > 0
    assert page.locator("#ask-image").evaluate("img => img.naturalWidth") == 810
    page.screenshot(path=str(tmp_path / "ask.png"), full_page=True)

    page.check("input[name=task][value=ground]")
    page.fill("#query", "the bus")
    page.click("#send")
    page.wait_for_function("() => document.querySelectorAll('#ask-boxes rect.box.final').length === 1")
    page.wait_for_selector("#answer:not([hidden]) #answer-text")
    assert page.inner_text("#answer-text").startswith("[")
    assert page.locator("#steps .step").count() == 1
    page.screenshot(path=str(tmp_path / "ground.png"), full_page=True)


def test_runs_view_opens_a_sample_with_its_trace_and_ground_truth(server, page, tmp_path):
    page.goto(f"{server}/?token={TOKEN}#runs")
    page.click("#runs-list tr[data-run=small]")
    page.wait_for_selector("#run-report .kv")
    assert "user" in page.inner_text("#run-report")
    page.wait_for_selector("#samples-table tr[data-sample=bus-box]")
    assert page.locator("#samples-table tbody tr").count() == 3
    page.select_option("#filter-correct", "false")
    page.wait_for_function("() => document.querySelectorAll('#samples-table tbody tr').length === 1")
    assert page.locator("#samples-table tbody tr").get_attribute("data-sample") == "wrong"
    page.select_option("#filter-correct", "")
    page.fill("#filter-q", "bus")
    page.press("#filter-q", "Enter")
    page.wait_for_function("() => document.querySelectorAll('#samples-table tbody tr').length === 1")
    page.click("#samples-table tr[data-sample=bus-box]")
    page.wait_for_selector("#sample-steps .step")
    page.wait_for_function("() => document.querySelectorAll('#run-boxes rect.box.gt').length === 1")
    assert page.locator("#run-boxes rect.box.final").count() == 1  # the predicted box beside the ground truth
    assert page.locator("#run-image").evaluate("img => img.naturalWidth") == 810
    assert "the bus" in page.inner_text("#sample-record")
    page.screenshot(path=str(tmp_path / "runs.png"), full_page=True)


def test_the_openapi_page_renders_offline(server, page):
    page.goto(server + "/docs")
    page.wait_for_selector(".swagger-ui .info .title")
    assert "hydra-vr" in page.inner_text(".swagger-ui .info .title")
    page.wait_for_selector(".opblock-summary-path[data-path='/v1/ask']")  # the endpoints are listed
