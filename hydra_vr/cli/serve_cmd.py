"""``hydra-vr serve``: the HTTP API and the web page (needs the ``serve`` extra)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import typer

from hydra_vr.cli.common import CONFIG_OPTION, SET_OPTION, fail

SERVE_HELP = "Serve the HTTP API and the web page: ask, ground, watch the steps, browse eval runs."


def serve_command(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind. Anything but loopback needs --token."),
    port: int = typer.Option(8000, "--port", help="TCP port (0: any free port; the address is printed)."),
    runs_dir: Path = typer.Option(None, "--runs-dir", help="Folder of eval runs (hydra-vr eval --out) to browse, read-only."),
    token: str = typer.Option(None, "--token", envvar="HYDRA_VR_TOKEN", show_envvar=True,
                              help="Bearer token every API request must carry; required off loopback."),
    concurrency: int = typer.Option(1, "--concurrency", min=1, help="Episodes at once; each worker loads its own models."),
    queue_size: int = typer.Option(32, "--queue-size", min=1, help="Jobs that may wait; beyond, 429 with Retry-After."),
    keep_jobs: int = typer.Option(1000, "--keep-jobs", min=1, help="Finished jobs kept for GET (oldest dropped)."),
    max_upload_mb: float = typer.Option(20.0, "--max-upload-mb", help="Largest image upload accepted."),
    cors_origin: list[str] = typer.Option(None, "--cors-origin", help="Allow this browser origin (repeatable); CORS is off by default."),
    config: str = CONFIG_OPTION,
    overrides: list[str] = SET_OPTION,
) -> None:
    """Start the server (FastAPI on uvicorn). Open http://HOST:PORT/ for the page, /docs for the API."""
    try:
        import uvicorn
        from pydantic import ValidationError

        from hydra_vr.config import ConfigError
        from hydra_vr.serve.app import create_app
        from hydra_vr.serve.settings import ServeSettings
    except ImportError as exc:
        fail(f"hydra-vr serve needs the 'serve' extra: pip install 'hydra-vr[serve]' ({exc})")
        return
    try:
        settings = ServeSettings(host=host, port=port, config=config, overrides=list(overrides or []), runs_dir=runs_dir,
                                 token=token or None, concurrency=concurrency, queue_size=queue_size, keep_jobs=keep_jobs,
                                 max_upload_mb=max_upload_mb, cors_origins=list(cors_origin or []))
    except ValidationError as exc:
        fail("; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors()))
        return
    if runs_dir is not None and not runs_dir.is_dir():
        fail(f"--runs-dir {runs_dir}: no such folder")
    try:
        app = create_app(settings)
    except ConfigError as exc:
        fail(str(exc))
        return
    # Bind here rather than in uvicorn so that the address printed is the real one, also for --port 0.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    sock.listen(2048)  # connections made once the address is printed wait in the backlog, not refused
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    typer.echo(f"hydra-vr serve: listening on http://{shown}:{bound}/ (API docs at /docs), pid {os.getpid()}", err=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=10))
    server.run(sockets=[sock])
