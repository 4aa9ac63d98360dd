"""Pydantic models of the API's messages (they also document it on the OpenAPI page)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorBody(BaseModel):
    detail: str = Field(..., description="What was wrong, in words.")


class JobAccepted(BaseModel):
    id: str
    status: str = Field(..., description="queued")
    job_url: str
    events_url: str = Field(..., description="Server-Sent Events: queued, running, one step per finished step, result.")


class JobView(BaseModel):
    id: str
    status: str = Field(..., description="queued, running, done or failed")
    task: str = Field(..., description="vqa (ask) or grounding (ground)")
    query: str
    strategy: str
    mode: str | None = Field(None, description="the loop mode asked for; None: the server config's")
    image: str = Field(..., description="sample:NAME or upload")
    image_url: str
    created: float
    started: float | None = None
    finished: float | None = None
    error: str | None = None
    answer: str | None = None
    boxes: list[list[float]] = Field(default_factory=list, description="[x1, y1, x2, y2] pixels, origin top-left")
    episode_seconds: float | None = Field(None, description="wall time of the episode itself; the rest of "
                                          "finished - started is the server's own work")
    trace: dict[str, Any] | None = Field(None, description="the episode: steps with options, code, feedback, timings")


class QueueCounts(BaseModel):
    queued: int
    running: int
    done: int
    failed: int


class Health(BaseModel):
    status: str
    workers: int
    ready_workers: int
    jobs: QueueCounts
    worker_errors: list[str] = Field(default_factory=list)


class SampleList(BaseModel):
    samples: list[str]


class RunList(BaseModel):
    runs: list[dict[str, Any]]


class RunReport(BaseModel):
    name: str
    report: dict[str, Any]
    built_from_results: bool = Field(..., description="true when the run has no report.json yet")
    markdown: str | None = None
    run: dict[str, Any] | None = Field(None, description="run.json: the run's settings")


class SamplePage(BaseModel):
    run: str
    total: int
    offset: int
    limit: int
    items: list[dict[str, Any]]


class SampleView(BaseModel):
    run: str
    record: dict[str, Any]
    trace: dict[str, Any] | None = None
