"""Typed configuration: YAML files under ``configs/`` validated into pydantic models.

``load_config("default")`` reads the packaged profile ``configs/default.yaml``; a path reads that
file instead. Dotted overrides (``["vision.detector.backend=owlv2"]``) are applied before
validation so typos fail loudly with the field path.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())


class ComponentConfig(_Strict):
    """A registry entry plus the keyword options its factory takes."""

    backend: str
    options: dict[str, Any] = Field(default_factory=dict)


class TilesConfig(_Strict):
    """find()'s detector also runs on ``grid`` x ``grid`` tiles overlapping by ``overlap`` of a tile's side
    (``hydra_vr.api.tiles``), for images whose longer side is ``min_side`` pixels or more. ``when``:
    "always", or "on_miss" (tiles only when the whole image shows none of the name, so what the whole-image
    pass already sees is never recounted on tiles)."""

    grid: int = Field(2, ge=1, le=4)
    overlap: float = Field(0.2, ge=0, lt=0.5)
    min_side: int = Field(416, ge=1)
    when: Literal["always", "on_miss"] = "always"


class VisionConfig(_Strict):
    """Which backend fills each vision role. ``None`` disables an optional role."""

    device: str = "cpu"  # "cpu", "cuda", "cuda:1", or "auto"
    detector: ComponentConfig = ComponentConfig(backend="nanodet")
    faces: ComponentConfig | None = ComponentConfig(backend="opencv_faces")
    ocr: ComponentConfig | None = ComponentConfig(backend="rapidocr")
    classifier: ComponentConfig | None = ComponentConfig(backend="efficientnet_lite")
    depth: ComponentConfig = ComponentConfig(backend="heuristic_depth")
    # simple_query / verify_property: "describe" composes tool outputs for the LLM to answer.
    vqa: ComponentConfig = ComponentConfig(backend="describe")
    # best_text_match / best_image_match: None falls back to the vqa backend.
    matcher: ComponentConfig | None = None
    captioner: ComponentConfig | None = None
    # find() of a name the detector has no class for but an outline answers ("coin", "round sign",
    # "triangle") looks for circles / triangles / rectangles in the pixels (hydra_vr.api.shapes).
    shapes: bool = True
    # find() of a name the detector has a class for but found none of ("golf ball": NanoDet's "sports
    # ball") asks the classifier's regions where it has classes for the name too, kept at this share or
    # more: stricter than for a name only the classifier knows, as the detector has looked already.
    # None: a detector's miss stays a miss.
    missed_by_detector_score: float | None = Field(0.4, ge=0, le=1)
    # find() through the detector also looks at overlapping tiles of the image, so a thing too small for
    # the detector's input size in a large photo is still seen ({} for the defaults of TilesConfig).
    # None (the default, as measured it did not help every strategy): the whole image only.
    find_tiles: TilesConfig | None = None


class LLMConfig(_Strict):
    backend: str = "llama_cpp"
    options: dict[str, Any] = Field(default_factory=dict)


class EmbeddingConfig(_Strict):
    backend: str = "minilm"
    options: dict[str, Any] = Field(default_factory=dict)


class SandboxConfig(_Strict):
    timeout_s: float = 10.0
    memory_mb: int = 1024
    cpu_s: float = 20.0
    # Per program: vision tool calls, and seconds spent in them (which timeout_s does not count). A
    # program looping "while not bald_man:" asked simple_query 500 times (416 s of LLM) before the call
    # limit stopped it; a sensible one loops over at most a few dozen finds.
    max_tool_calls: int = Field(200, ge=1)
    max_tool_s: float = Field(120.0, gt=0)


class AgentConfig(_Strict):
    """The agent: which strategy, HYDRA's ablation ``mode``, and budgets every strategy shares.

    A strategy's own options go in a section named after it (``agent.hammr: {flat: true}``),
    validated by that strategy's options model when the agent is built. ``mode: vipergpt`` is
    another name for ``strategy: vipergpt`` (kept for old configs and command lines).
    """

    model_config = ConfigDict(extra="allow", protected_namespaces=())

    strategy: str = "hydra"
    mode: Literal["full", "no_rl", "one_step", "no_sampling", "vipergpt"] = "no_rl"
    num_options: int = Field(5, ge=1, le=10)
    max_steps: int = Field(5, ge=1)
    max_code_retries: int = Field(2, ge=0)
    max_replans: int = Field(2, ge=0)

    @model_validator(mode="after")
    def _sections_are_dicts(self) -> AgentConfig:
        for key, value in (self.model_extra or {}).items():
            if not isinstance(value, dict):
                raise ValueError(f"agent.{key} must be a section of options for the strategy {key!r}, got {value!r}")
        return self

    @property
    def strategy_name(self) -> str:
        return "vipergpt" if self.mode == "vipergpt" else self.strategy

    def strategy_options(self, name: str | None = None) -> dict[str, Any]:
        """The ``agent.<name>`` section (the current strategy's by default), unvalidated."""
        return dict((self.model_extra or {}).get(name or self.strategy_name) or {})


class AnswersConfig(_Strict):
    """The answer checks (``hydra_vr.agent.checks``): ``disable`` names checks to switch off for an ablation."""

    disable: list[str] = Field(default_factory=list)


class HydraConfig(_Strict):
    name: str = "default"
    cache_dir: str = "~/.cache/hydra-vr"
    vision: VisionConfig = VisionConfig()
    llm: LLMConfig = LLMConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    sandbox: SandboxConfig = SandboxConfig()
    agent: AgentConfig = AgentConfig()
    answers: AnswersConfig = AnswersConfig()

    @property
    def cache_path(self) -> Path:
        return Path(self.cache_dir).expanduser()


class ConfigError(ValueError):
    """A config file is missing, unreadable or invalid."""


def packaged_config_names() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files("hydra_vr.configs").iterdir() if p.name.endswith(".yaml"))


def _read_yaml(name_or_path: str | Path) -> dict[str, Any]:
    path = Path(name_or_path)
    if path.suffix in {".yaml", ".yml"} or path.exists():
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}")
        text = path.read_text()
    else:
        res = resources.files("hydra_vr.configs").joinpath(f"{name_or_path}.yaml")
        if not res.is_file():
            raise ConfigError(
                f"no packaged config named {name_or_path!r}; choose one of {packaged_config_names()} or pass a .yaml path"
            )
        text = res.read_text()
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{name_or_path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{name_or_path}: top level must be a mapping, got {type(data).__name__}")
    return data


def _apply_override(data: dict[str, Any], override: str) -> None:
    key, sep, raw = override.partition("=")
    if not sep or not key:
        raise ConfigError(f"override {override!r} must look like section.field=value")
    node = data
    parts = key.strip().split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = yaml.safe_load(raw)


def read_yaml_with_overrides(name_or_path: str | Path, overrides: list[str] | None = None) -> dict[str, Any]:
    """A packaged YAML (by name) or a YAML file as a dict, with ``section.field=value`` overrides applied.

    Values are parsed as YAML, so ``a.b=3`` is an int and ``a.b=[1, 2]`` a list.
    """
    data = _read_yaml(name_or_path)
    for override in overrides or []:
        _apply_override(data, override)
    return data


def load_config(name_or_path: str | Path = "default", overrides: list[str] | None = None) -> HydraConfig:
    """Load a packaged profile by name (``default``, ``hub``, ``openai``) or a YAML file."""
    data = read_yaml_with_overrides(name_or_path, overrides)
    try:
        return HydraConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"invalid config {name_or_path}:\n{exc}") from exc
