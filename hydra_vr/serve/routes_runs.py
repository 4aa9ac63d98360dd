"""``/v1/runs/...``: read-only views of eval run folders under ``--runs-dir``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import FileResponse

from hydra_vr.serve.runs import BadRunName, RunNotFound
from hydra_vr.serve.schemas import ErrorBody, RunList, RunReport, SamplePage, SampleView
from hydra_vr.serve.state import serve_state

router = APIRouter(prefix="/v1/runs", tags=["runs"])
ERRORS: dict[int | str, dict[str, Any]] = {400: {"model": ErrorBody, "description": "bad run name"},
                                           404: {"model": ErrorBody, "description": "no such run or sample"}}
T = TypeVar("T")


def _checked(call: Callable[[], T]) -> T:
    try:
        return call()
    except BadRunName as exc:
        raise HTTPException(400, str(exc)) from None
    except RunNotFound as exc:
        raise HTTPException(404, str(exc)) from None


@router.get("", response_model=RunList)
def list_runs(request: Request) -> RunList:
    """Eval runs under the runs folder, with their headline figures when they have a report."""
    return RunList(runs=serve_state(request).runs.list_runs())


@router.get("/{name}", response_model=RunReport, responses=ERRORS)
def run_report(request: Request, name: str) -> RunReport:
    """The run's report (``report.json``; built from the results when missing) and its settings."""
    return RunReport(**_checked(lambda: serve_state(request).runs.report(name)))


@router.get("/{name}/samples", response_model=SamplePage, responses=ERRORS)
def run_samples(request: Request, name: str,
                correct: bool | None = Query(None, description="true: right answers only; false: wrong ones (score < 0.5 or error)"),
                q: str | None = Query(None, max_length=200, description="text to find in id, query, prediction or ground truth"),
                offset: int = Query(0, ge=0), limit: int = Query(50, ge=1, le=500)) -> SamplePage:
    """One page of the run's samples, filtered."""
    runs = serve_state(request).runs
    return SamplePage(**_checked(lambda: runs.samples(name, correct=correct, q=q, offset=offset, limit=limit)))


@router.get("/{name}/samples/{sample_id}", response_model=SampleView, responses=ERRORS)
def run_sample(request: Request, name: str, sample_id: str) -> SampleView:
    """One sample: its record (prediction, ground truth, score) and its trace."""
    return SampleView(**_checked(lambda: serve_state(request).runs.sample(name, sample_id)))


@router.get("/{name}/samples/{sample_id}/image", responses=ERRORS)
def run_sample_image(request: Request, name: str, sample_id: str) -> FileResponse:
    """The sample's image, when it is still on this machine."""
    return FileResponse(_checked(lambda: serve_state(request).runs.sample_image(name, sample_id)))
