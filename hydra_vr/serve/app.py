"""The FastAPI app: built by :func:`create_app` from its settings; nothing runs until it is served.

Workers and their models start with the app (lifespan) and stop with it; uploads live in a work
folder of the app's own and go with it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from hydra_vr.serve.episodes import AgentFactory, EpisodeWorker
from hydra_vr.serve.guard import DOCS_STATIC, GuardMiddleware
from hydra_vr.serve.jobs import Job, JobQueue
from hydra_vr.serve.metrics import ServeMetrics
from hydra_vr.serve.routes_jobs import router as jobs_router
from hydra_vr.serve.routes_runs import router as runs_router
from hydra_vr.serve.runs import RunsBrowser
from hydra_vr.serve.schemas import Health, QueueCounts
from hydra_vr.serve.settings import ServeSettings
from hydra_vr.serve.state import ServeState, serve_state
from hydra_vr.serve.timing import ServerTimingMiddleware


def static_dir() -> Path:
    return Path(str(resources.files("hydra_vr.serve") / "static"))


def default_agent_factory(settings: ServeSettings) -> AgentFactory:
    """Agents as ``ask`` builds them, from the server's config (read now, so a bad one fails at start)."""
    from hydra_vr.config import load_config

    cfg = load_config(settings.config, settings.overrides)

    def build() -> Any:
        from hydra_vr.factory import build_agent

        return build_agent(cfg)

    return build


def config_strategy(settings: ServeSettings) -> str:
    """The strategy the server's config names (``agent.mode: vipergpt`` is the vipergpt strategy's old name)."""
    from hydra_vr.config import load_config

    return load_config(settings.config, settings.overrides).agent.strategy_name


def _drop_upload(job: Job) -> None:
    if job.request.owned_image:
        job.request.image_path.unlink(missing_ok=True)


def create_app(settings: ServeSettings, agent_factory: AgentFactory | None = None) -> FastAPI:
    """The app for ``settings``; ``agent_factory`` builds one agent per worker (tests pass their own)."""
    factory = agent_factory or default_agent_factory(settings)
    metrics = ServeMetrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own_dir = settings.work_dir is None
        work = Path(tempfile.mkdtemp(prefix="hydra-vr-serve-")) if own_dir else Path(settings.work_dir)  # type: ignore[arg-type]
        jobs = JobQueue(lambda: EpisodeWorker(factory), metrics, concurrency=settings.concurrency,
                        queue_size=settings.queue_size, keep_jobs=settings.keep_jobs, on_drop=_drop_upload)
        app.state.hydra = ServeState(settings, jobs, RunsBrowser(settings.runs_dir), metrics, work / "uploads",
                                     default_strategy=config_strategy(settings))
        jobs.start()
        try:
            yield
        finally:
            jobs.stop()
            if own_dir:
                shutil.rmtree(work, ignore_errors=True)

    # FastAPIOffline: the /docs and /redoc pages with their scripts served by the app, not a CDN.
    app = FastAPIOffline(title="hydra-vr", version="0.1.0", lifespan=lifespan, static_url=DOCS_STATIC,
                         description="Ask questions about images, ground expressions to boxes, watch the steps, "
                                                 "browse eval runs. Boxes are [x1, y1, x2, y2] pixels, origin top-left.")
    app.include_router(jobs_router)
    app.include_router(runs_router)
    _add_plain_routes(app)
    app.mount("/static", StaticFiles(directory=static_dir()), name="static")
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["GET", "POST"],
                           allow_headers=["Authorization", "Content-Type", "Last-Event-ID"])
    # Added last so they run first: nothing is parsed for a request without the token, and the
    # timing covers everything the server does, refusals included.
    app.add_middleware(GuardMiddleware, token=settings.token, max_upload_bytes=settings.max_upload_bytes)
    app.add_middleware(ServerTimingMiddleware)
    return app


def _add_plain_routes(app: FastAPI) -> None:
    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(static_dir() / "index.html")

    @app.get("/healthz", response_model=Health, tags=["server"])
    async def healthz(request: Request) -> Health:
        """Liveness, workers with their models loaded, job counts, recent agent build errors."""
        state = serve_state(request)
        return Health(status="ok", workers=state.settings.concurrency, ready_workers=state.jobs.ready_workers,
                      jobs=QueueCounts(**state.jobs.counts()), worker_errors=state.jobs.worker_errors)

    @app.get("/metrics", tags=["server"], response_class=Response)
    async def metrics(request: Request) -> Response:
        """Prometheus text format: jobs queued, running, done, failed, rejected; episode seconds."""
        state = serve_state(request)
        return Response(state.metrics.render(), media_type=state.metrics.content_type)
