"""Real photos that ship inside PyPI packages, usable as ``sample:NAME`` wherever an image is asked for.

No dataset site is needed to try the tools: scikit-image, matplotlib and scikit-learn install
pictures with their packages, and the ultralytics wheel carries bus.jpg and zidane.jpg (fetched
with ``pip download --no-deps`` into the cache, not installed: installing ultralytics would pull
a different torchvision).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ULTRALYTICS_VERSION = "8.4.190"
_PACKAGE_IMAGES = {
    "coffee": ("skimage", "data/coffee.png"),
    "chelsea": ("skimage", "data/chelsea.png"),
    "astronaut": ("skimage", "data/astronaut.png"),
    "rocket": ("skimage", "data/rocket.jpg"),
    "motorcycle": ("skimage", "data/motorcycle_left.png"),
    "page": ("skimage", "data/page.png"),
    "text": ("skimage", "data/text.png"),
    "coins": ("skimage", "data/coins.png"),
    "grace_hopper": ("matplotlib", "mpl-data/sample_data/grace_hopper.jpg"),
    "china": ("sklearn", "datasets/images/china.jpg"),
    "flower": ("sklearn", "datasets/images/flower.jpg"),
}
_ULTRALYTICS_IMAGES = {"bus": "ultralytics/assets/bus.jpg", "zidane": "ultralytics/assets/zidane.jpg"}


class SampleImageError(LookupError):
    pass


def sample_names() -> list[str]:
    return sorted([*_PACKAGE_IMAGES, *_ULTRALYTICS_IMAGES])


def _cache_dir() -> Path:
    return Path(os.environ.get("HYDRA_VR_CACHE", "~/.cache/hydra-vr")).expanduser() / "sample-images"


def sample_image(name: str) -> Path:
    """Path of the sample photo ``name`` (see :func:`sample_names`)."""
    if name in _PACKAGE_IMAGES:
        pkg, rel = _PACKAGE_IMAGES[name]
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            raise SampleImageError(f"sample {name!r} ships with the {pkg} package, which is not installed")
        path = Path(list(spec.submodule_search_locations)[0]) / rel
        if not path.is_file():
            raise SampleImageError(f"sample {name!r} not found at {path}")
        return path
    if name in _ULTRALYTICS_IMAGES:
        return _ultralytics_asset(_ULTRALYTICS_IMAGES[name])
    raise SampleImageError(f"unknown sample image {name!r}; choose from {', '.join(sample_names())}")


def _ultralytics_asset(member: str) -> Path:
    target = _cache_dir() / Path(member).name
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", tmp, f"ultralytics=={ULTRALYTICS_VERSION}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wheels = list(Path(tmp).glob("ultralytics-*.whl"))
        if proc.returncode != 0 or not wheels:
            raise SampleImageError(f"could not fetch the ultralytics wheel for {Path(member).name}: {proc.stderr.strip()[-300:]}")
        with zipfile.ZipFile(wheels[0]) as zf:
            for m in _ULTRALYTICS_IMAGES.values():
                out = target.parent / Path(m).name
                tmp_out = out.with_suffix(".part")
                tmp_out.write_bytes(zf.read(m))
                tmp_out.replace(out)  # atomic: a killed fetch leaves no half image behind
    return target


def resolve_image(spec: str | Path) -> Path:
    """A file path, or ``sample:NAME`` for a packaged photo."""
    s = str(spec)
    if s.startswith("sample:"):
        return sample_image(s.split(":", 1)[1])
    return Path(s)
