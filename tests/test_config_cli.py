"""Config loading/validation and the 'hydra-vr tools' command."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from hydra_vr.cli.main import app
from hydra_vr.config import ConfigError, HydraConfig, load_config, packaged_config_names

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def test_default_profile_is_the_offline_one():
    cfg = load_config("default")
    assert isinstance(cfg, HydraConfig)
    assert cfg.vision.detector.backend == "nanodet"
    assert cfg.vision.vqa.backend == "describe"
    assert cfg.llm.backend == "llama_cpp"
    assert "default" in packaged_config_names()


def test_every_packaged_profile_validates():
    for name in packaged_config_names():
        load_config(name)


def test_overrides_and_errors(tmp_path):
    cfg = load_config("default", ["vision.detector.options.score_threshold=0.5", "agent.num_options=3"])
    assert cfg.vision.detector.options["score_threshold"] == 0.5 and cfg.agent.num_options == 3
    with pytest.raises(ConfigError, match="num_options"):
        load_config("default", ["agent.num_options=0"])
    with pytest.raises(ConfigError, match="detectr"):
        load_config("default", ["vision.detectr.backend=x"])  # typo: extra fields are refused
    with pytest.raises(ConfigError, match="no packaged config"):
        load_config("nonexistent-profile")
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("vision: [1, 2")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_pyproject_lists_every_subpackage():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    # every folder ships: code packages and data-only folders (models, templates, examples)
    found = {".".join(p.relative_to(ROOT).parts) for p in [ROOT / "hydra_vr", *(ROOT / "hydra_vr").rglob("*")]
             if p.is_dir() and p.name != "__pycache__"}
    assert found - listed == set(), "add these packages to pyproject.toml"


def test_import_has_no_side_effects():
    import subprocess
    import sys

    code = "import sys, hydra_vr, hydra_vr.api, hydra_vr.config; print(any(m in sys.modules for m in ('torch', 'onnxruntime', 'llama_cpp')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"  # importing the API loads no model framework


@pytest.mark.slow
def test_tools_command_json_and_draw(photo, tmp_path):
    out_png = tmp_path / "boxes.png"
    res = runner.invoke(app, ["tools", str(photo("coffee")), "--find", "cup", "--colors", "--json", "--draw", str(out_png)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["find"]["cup"][0]["label"] == "cup"
    assert len(data["find"]["cup"][0]["box"]) == 4
    assert data["colors"][0]["name"]
    drawn = Image.open(out_png)
    assert drawn.size == (600, 400)


def test_tools_command_errors(tmp_path):
    res = runner.invoke(app, ["tools", str(tmp_path / "nope.jpg"), "--find", "cup"])
    assert res.exit_code == 2 and "image file not found" in res.output
    res = runner.invoke(app, ["tools", "sample:unknown", "--find", "cup"])
    assert res.exit_code == 2 and "unknown sample image" in res.output
    img = tmp_path / "x.png"
    Image.new("RGB", (10, 10)).save(img)
    res = runner.invoke(app, ["tools", str(img)])
    assert res.exit_code == 2 and "nothing to do" in res.output
    res = runner.invoke(app, ["tools", str(img), "--find", "cup", "--config", "nosuch"])
    assert res.exit_code == 2 and "no packaged config" in res.output


def test_help_explains():
    res = runner.invoke(app, ["tools", "--help"])
    assert res.exit_code == 0
    assert re.search(r"sample:NAME", res.output) and "--draw" in res.output
