"""Settings of one server: where it listens, what it loads, and its safety limits."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

# PIL's own default pixel limit (Image.MAX_IMAGE_PIXELS): beyond it PIL warns, beyond twice it refuses.
PIL_DEFAULT_MAX_PIXELS = 89_478_485


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, ``localhost``)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: may resolve to anything


class ServeSettings(BaseModel):
    """Everything :func:`hydra_vr.serve.app.create_app` needs; the CLI fills it from its options."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    config: str = "default"  # packaged profile name or YAML file, as for every command
    overrides: list[str] = Field(default_factory=list)
    runs_dir: Path | None = None  # eval run folders shown read-only by the runs browser
    token: str | None = None  # bearer token every data request must carry; required off loopback
    concurrency: int = Field(1, ge=1, le=64)  # episodes at once; each worker loads its own models
    queue_size: int = Field(32, ge=1, le=100_000)  # jobs waiting beyond the running ones
    keep_jobs: int = Field(1000, ge=1)  # finished jobs kept for GET; oldest dropped first
    max_upload_mb: float = Field(20.0, gt=0)
    max_image_pixels: int = Field(PIL_DEFAULT_MAX_PIXELS, ge=1)
    cors_origins: list[str] = Field(default_factory=list)  # empty: CORS off
    work_dir: Path | None = None  # uploaded images live here; a private temp dir when None

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)

    @model_validator(mode="after")
    def _safe_binding(self) -> ServeSettings:
        if not is_loopback(self.host) and not self.token:
            raise ValueError(
                f"binding {self.host!r} exposes the server beyond this machine: set a token "
                "(--token or HYDRA_VR_TOKEN) that every request must then carry"
            )
        return self
