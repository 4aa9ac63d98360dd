"""Layering: the controller sits below training, so nothing in hydra_vr.controller imports hydra_vr.training."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

CONTROLLER = Path(__file__).resolve().parents[1] / "hydra_vr" / "controller"
OLD_CHECKPOINT = Path(__file__).parent / "fixtures" / "controller" / "dqn_v1_n3"
TRAINING = re.compile(r"hydra_vr\.training(?:[.:]|$)")


def training_imports(source: str, module: str) -> list[str]:
    """Modules of ``hydra_vr.training`` that ``source`` (the module ``module``) imports, by statement or by name."""
    found = []
    package = module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            names = [target, *(f"{target}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value]  # lazy imports by name: importlib, registry entries "module:attr"
        found += [n for n in names if TRAINING.match(n)]
    return found


def test_the_checker_sees_every_kind_of_import():
    module = "hydra_vr.controller.dqn"
    assert training_imports("from hydra_vr.training.checkpoint import load_checkpoint", module)
    assert training_imports("import hydra_vr.training.train as t", module)
    assert training_imports("from ..training import masked_dqn", module)
    assert training_imports("from .. import training", module)
    assert training_imports("import importlib\nimportlib.import_module('hydra_vr.training.train')", module)
    assert training_imports("REG = {'dqn': 'hydra_vr.training.x:Y'}", module)
    assert not training_imports('"""Wrapped by ``hydra_vr.training.masked_dqn``."""\nfrom . import observation', module)
    assert not training_imports("from hydra_vr.controller.qnet import MaskedQNetwork\nimport hydra_vr.trainingwheels", module)


def test_no_controller_module_imports_training():
    files = sorted(CONTROLLER.rglob("*.py"))
    assert {"base.py", "checkpoint.py", "dqn.py", "observation.py", "qnet.py"} <= {f.name for f in files}
    offenders = {}
    for path in files:
        parts = path.relative_to(CONTROLLER.parent.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if path.name == "__init__.py":
            module += ".__init__"  # relative imports in a package's __init__ resolve from the package itself
        if found := training_imports(path.read_text(), module):
            offenders[str(path.name)] = found
    assert offenders == {}


def test_importing_and_using_the_controller_does_not_import_training():
    """Also at run time: loading a checkpoint must not unpickle model.zip's training policy class."""
    code = f"""
import json, sys
import numpy as np
import hydra_vr.controller
from hydra_vr.controller import base, checkpoint, dqn, observation, qnet
from hydra_vr.controller.base import ControllerState

class Embedder:
    name, dim = "minilm:all-MiniLM-L6-v2", 384
    def embed(self, texts):
        return np.ones((len(texts), self.dim), dtype=np.float32) / self.dim ** 0.5

controller = dqn.DQNController({str(OLD_CHECKPOINT)!r}, embedder=Embedder())
choice = controller.select(["a", "b"], [0.4, 0.6], ControllerState(query="q", memory_text="m", step=1))
print(json.dumps({{"choice": choice, "training": sorted(m for m in sys.modules if m.startswith("hydra_vr.training")),
                  "controller": sorted(m for m in sys.modules if m.startswith("hydra_vr.controller."))}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["choice"] in (-1, 0, 1)
    assert {"hydra_vr.controller.checkpoint", "hydra_vr.controller.qnet"} <= set(report["controller"])
    assert report["training"] == []
