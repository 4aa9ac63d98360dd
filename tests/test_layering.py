"""Lower layers never import higher ones: the package's import graph, read from the source with ``ast``.

Each package lists the hydra_vr packages it may import (at module level or inside a function). A new edge
fails here until it is either removed or argued for by adding it to ``ALLOWED``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import hydra_vr

ROOT = Path(hydra_vr.__file__).parent

# package -> the hydra_vr packages it may import; the language layer (lexicon, question) sits above
# nothing but the answer types, and api takes explicit inputs: it never parses questions itself.
# ``asked`` holds what a question asks of a measure (plain dataclasses): the parsers build it, api takes it.
BASE = {"config", "registry", "assets", "answer_types", "prompts", "lexicon", "gazetteer", "asked"}
ALLOWED: dict[str, set[str]] = {
    "lexicon": set(),
    "gazetteer": set(),
    "asked": set(),
    "answer_types": {"lexicon", "gazetteer", "asked"},
    "question": {"answer_types", "lexicon", "gazetteer", "asked"},
    "llm": BASE,
    "api": BASE | {"llm"},
    "sandbox": BASE | {"api"},
    "memory": BASE | {"api"},
    "controller": BASE | {"llm"},
    "datasets": BASE,
    "agent": BASE | {"api", "llm", "controller", "memory", "sandbox", "question"},
    "factory": BASE | {"api", "llm", "controller", "sandbox", "agent", "question"},
}


def _imported_packages(path: Path) -> set[str]:
    """The hydra_vr packages ``path`` imports (absolute imports; ``from hydra_vr import x`` names x)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = ([f"{node.module}.{a.name}" for a in node.names] if node.module == "hydra_vr"
                     else [node.module])
        else:
            continue
        found |= {n.split(".")[1] for n in names if n.startswith("hydra_vr.")}
    return found


def _package_of(path: Path) -> str:
    return path.relative_to(ROOT).parts[0].removesuffix(".py")


def test_lower_layers_never_import_higher_ones():
    broken = []
    for path in sorted(ROOT.rglob("*.py")):
        pkg = _package_of(path)
        if pkg not in ALLOWED:
            continue
        for dep in sorted(_imported_packages(path) - ALLOWED[pkg] - {pkg}):
            broken.append(f"{path.relative_to(ROOT)} imports hydra_vr.{dep}")
    assert not broken, "layering broken:\n" + "\n".join(broken)


def test_the_reader_catches_an_upward_import(tmp_path):
    # the graph reader itself: both import forms are seen, a relative import is not a package edge
    probe = tmp_path / "probe.py"
    probe.write_text("from hydra_vr import agent as a\nimport hydra_vr.question.frame\n"
                     "def f():\n    from hydra_vr.eval.runner import x\nfrom . import sibling\n")
    assert _imported_packages(probe) == {"agent", "question", "eval"}
