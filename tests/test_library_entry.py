"""The notebook entry point: `hydra_vr.load()` gives an ImagePatch bound to the default profile's tools."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_load_binds_the_default_tools_on_a_real_photo(photo):
    import hydra_vr

    ImagePatch = hydra_vr.load()
    buses = ImagePatch(str(photo("bus"))).find("bus")
    assert buses, "the bus in the ultralytics photo must be found"
    bus = buses[0]
    assert bus.label == "bus" and bus.width > 400  # the bus spans most of the photo's width
    # sample:NAME works wherever an image is asked for
    people = ImagePatch("sample:bus").find("person")
    assert len(people) >= 3
    # two loads are two independent bindings: no global state
    assert hydra_vr.load()._toolbox is not ImagePatch._toolbox


def test_unbound_patch_says_how_to_bind(photo):
    from hydra_vr.api import ImagePatch

    with pytest.raises(RuntimeError, match=r"hydra_vr\.load\(\)"):
        ImagePatch(str(photo("bus"))).find("bus")


def test_bad_inputs_are_clear_errors():
    import hydra_vr
    from hydra_vr.api import ImageLoadError

    ImagePatch = hydra_vr.load()
    with pytest.raises(ImageLoadError, match="unknown sample image"):
        ImagePatch("sample:nope")
    with pytest.raises(ImageLoadError, match="not found"):
        ImagePatch("/nonexistent/photo.jpg")
    with pytest.raises(ValueError, match="config"):
        hydra_vr.load("no-such-profile")


def test_importing_the_package_loads_no_model():
    code = "import sys, hydra_vr; hydra_vr.load; print(sorted(m for m in ('torch', 'onnxruntime', 'llama_cpp') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
