"""``/v1/ask``, ``/v1/ground``, ``/v1/jobs/...`` and ``/v1/samples``: submit episodes and watch them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, get_args

from fastapi import APIRouter, File, Form, HTTPException, Request, UploadFile
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from hydra_vr.assets import sample_names
from hydra_vr.config import AgentConfig
from hydra_vr.serve.images import ImageRejected, check_image_bytes, resolve_sample, store_upload
from hydra_vr.serve.jobs import Job, JobRequest, QueueFull
from hydra_vr.serve.schemas import ErrorBody, JobAccepted, JobView, SampleList
from hydra_vr.serve.state import ServeState, serve_state

# HYDRA's ablation modes; "vipergpt" is also a strategy of its own (mode vipergpt is its old name).
MODES: tuple[str, ...] = tuple(m for m in get_args(AgentConfig.model_fields["mode"].annotation) if m != "vipergpt")
MAX_QUERY_CHARS = 2000
KEEPALIVE_S = 15.0

router = APIRouter(prefix="/v1", tags=["jobs"])
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "bad input (query, image, strategy, mode)"},
    401: {"model": ErrorBody, "description": "missing or wrong bearer token"},
    413: {"model": ErrorBody, "description": "upload over the size limit"},
    429: {"model": ErrorBody, "description": "queue full; see Retry-After"},
}


def resolve_mode(strategy: str | None, mode: str | None) -> tuple[str, str | None]:
    """(strategy, HYDRA mode or None) for the request, or a 400 saying what is allowed."""
    from hydra_vr.agent.strategy import default_strategy_registry

    names = default_strategy_registry().names()
    name = (strategy or "hydra").strip().lower()
    mode = (mode or "").strip() or None
    if mode == "vipergpt":  # the old spelling of the strategy
        if name not in ("hydra", "vipergpt"):
            raise HTTPException(400, f"mode 'vipergpt' is the vipergpt strategy; it contradicts strategy {name!r}")
        name, mode = "vipergpt", None
    if name not in names:
        raise HTTPException(400, f"strategy {name!r} is not available; choose one of {', '.join(names)}")
    if mode is not None and mode not in MODES:
        raise HTTPException(400, f"unknown mode {mode!r}; choose one of {', '.join(MODES)} (HYDRA's ablations)")
    if mode is not None and name != "hydra":
        raise HTTPException(400, f"mode {mode!r} is one of HYDRA's ablations; it contradicts strategy {name!r}")
    return name, mode


@router.get("/strategies")
async def list_strategies() -> dict[str, list[dict[str, str]]]:
    """The agent strategies this server runs (``strategy`` in /v1/ask and /v1/ground), with a line each."""
    from hydra_vr.agent.strategy import strategy_table

    return {"strategies": [{"name": n, "summary": summary} for n, summary, _ in strategy_table()]}


def job_view(job: Job) -> JobView:
    result = job.result or {}
    return JobView(
        id=job.id, status=job.status, task=job.request.task, query=job.request.query, strategy=job.request.strategy,
        mode=job.request.mode, image=job.request.image_label, image_url=f"/v1/jobs/{job.id}/image",
        created=job.created, started=job.started, finished=job.finished, error=job.error,
        answer=result.get("answer"), boxes=result.get("boxes") or [], episode_seconds=job.episode_seconds, trace=job.result,
    )


async def _submit(state: ServeState, task: str, query: str, image: UploadFile | None, sample: str | None,
                  strategy: str | None, mode: str | None) -> JSONResponse:
    query = (query or "").strip()
    if not query:
        raise HTTPException(400, "the query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise HTTPException(400, f"the query has {len(query)} characters; the limit is {MAX_QUERY_CHARS}")
    strategy, mode = resolve_mode(strategy or state.default_strategy, mode)
    sample = (sample or "").strip() or None
    has_file = image is not None and bool(image.filename or image.size)
    if has_file == (sample is not None):
        raise HTTPException(400, "give exactly one image: an uploaded file (field 'image') or a sample name (field 'sample')")
    settings = state.settings
    try:
        if sample is not None:
            label, owned = f"sample:{sample.removeprefix('sample:')}", False
            path = state.sample_paths.get(label)
            if path is None:  # the first use of bus / zidane may fetch them: off the event loop
                path = state.sample_paths[label] = await run_in_threadpool(resolve_sample, sample)
        else:
            assert image is not None
            data = await image.read()  # bounded: the guard refused bodies much larger than the limit
            fmt = await run_in_threadpool(check_image_bytes, data, max_bytes=settings.max_upload_bytes,
                                          max_pixels=settings.max_image_pixels)
            path, label, owned = await run_in_threadpool(store_upload, data, fmt, state.upload_dir), "upload", True
    except ImageRejected as exc:
        raise HTTPException(exc.status, str(exc)) from None
    request = JobRequest(task=task, query=query, image_path=path, image_label=label, mode=mode,  # type: ignore[arg-type]
                         strategy=strategy, owned_image=owned)
    try:
        job = state.jobs.submit(request)
    except QueueFull as exc:
        if owned:
            path.unlink(missing_ok=True)
        return JSONResponse({"detail": str(exc)}, status_code=429, headers={"Retry-After": str(exc.retry_after)})
    body = JobAccepted(id=job.id, status=job.status, job_url=f"/v1/jobs/{job.id}", events_url=f"/v1/jobs/{job.id}/events")
    return JSONResponse(body.model_dump(), status_code=202)


@router.post("/ask", status_code=202, response_model=JobAccepted, responses=ERRORS, summary="Ask a question about an image")
async def ask(request: Request, query: str = Form(..., description="the question"),
              image: UploadFile | None = File(None, description="an image file (PNG, JPEG, ...)"),
              sample: str | None = Form(None, description="a packaged photo instead of a file: bus, coffee, ..."),
              strategy: str | None = Form(None, description="an agent strategy (GET /v1/strategies lists them); "
                                                  "default: the server config's"),
              mode: str | None = Form(None, description=f"loop mode: {', '.join(MODES)}")) -> JSONResponse:
    """Queue an episode that answers ``query``; returns the job id at once (202).

    Multipart form: ``query``, and either ``image`` (a file) or ``sample`` (a packaged photo name)."""
    return await _submit(serve_state(request), "vqa", query, image, sample, strategy, mode)


@router.post("/ground", status_code=202, response_model=JobAccepted, responses=ERRORS, summary="Ground an expression to boxes")
async def ground(request: Request, query: str = Form(..., description="the referring expression"),
                 image: UploadFile | None = File(None), sample: str | None = Form(None),
                 strategy: str | None = Form(None), mode: str | None = Form(None)) -> JSONResponse:
    """Queue an episode that finds the boxes of ``query``; returns the job id at once (202).

    Multipart form: ``query``, and either ``image`` (a file) or ``sample`` (a packaged photo name)."""
    return await _submit(serve_state(request), "grounding", query, image, sample, strategy, mode)


def _job(request: Request, job_id: str) -> Job:
    job = serve_state(request).jobs.get(job_id)
    if job is None:
        raise HTTPException(404, f"no job {job_id!r} (unknown, or dropped: finished jobs are kept up to a limit)")
    return job


@router.get("/jobs/{job_id}", response_model=JobView, responses={404: {"model": ErrorBody}})
async def get_job(request: Request, job_id: str) -> JobView:  # no I/O: served on the event loop
    """Status, answer, boxes and the whole trace once finished; ``error`` says why a job failed."""
    return job_view(_job(request, job_id))


@router.get("/jobs/{job_id}/image", responses={404: {"model": ErrorBody}})
def job_image(request: Request, job_id: str) -> FileResponse:
    """The image the job runs on, for drawing its boxes."""
    job = _job(request, job_id)
    if not job.request.image_path.is_file():
        raise HTTPException(404, "the job's image is gone")
    return FileResponse(job.request.image_path)


def _sse(index: int, name: str, data: dict[str, Any]) -> str:
    return f"id: {index}\nevent: {name}\ndata: {json.dumps(data, default=str, ensure_ascii=False)}\n\n"


async def _events(request: Request, job: Job, start: int) -> AsyncIterator[str]:
    index = start
    while True:
        events, finished = job.events_since(index)
        for name, data in events:
            yield _sse(index, name, data)
            index += 1
        if finished:  # the final event is appended with the status change: it was in this batch
            return
        if await request.is_disconnected():
            return
        if not await job.wait_for_event(index, KEEPALIVE_S):
            yield ": keep-alive\n\n"  # proxies close silent connections


@router.get("/jobs/{job_id}/events", responses={404: {"model": ErrorBody}},
            response_class=StreamingResponse, summary="Server-Sent Events of a job")
async def job_events(request: Request, job_id: str) -> StreamingResponse:
    """``queued``, ``running``, one ``step`` per finished step (options, choice, code, feedback),
    then ``result`` (status, error, the episode). Event ids count from 0; a reconnect with
    ``Last-Event-ID`` resumes after that event."""
    job = _job(request, job_id)
    try:
        start = int(request.headers.get("last-event-id", "-1")) + 1
    except ValueError:
        start = 0
    return StreamingResponse(_events(request, job, max(0, start)), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.get("/samples", response_model=SampleList, tags=["samples"])
async def samples() -> SampleList:
    """Packaged photos usable as ``sample``."""
    return SampleList(samples=sample_names())


@router.get("/samples/{name}/image", tags=["samples"], responses={400: {"model": ErrorBody}, 404: {"model": ErrorBody}})
def sample_file(name: str) -> FileResponse:
    try:
        return FileResponse(resolve_sample(name))
    except ImageRejected as exc:
        raise HTTPException(exc.status, str(exc)) from None
