"""Controller checkpoints: a directory with ``meta.json`` and the SB3 ``model.zip``.

``meta.json`` records what the network's input and output mean, so a checkpoint is never used
with another embedding model or another number of option slots::

    {"format": "hydra-vr-dqn", "version": 1,
     "embedding": {"name": "minilm:all-MiniLM-L6-v2", "dim": 384},
     "num_options": 5, "obs_dim": 2701, "memory_chars": 1000,
     "reward": {"r1": 100, "alpha": 100, "replan_penalty": 1, "invalid_reward": -100},
     "reward_scale": 0.01, "gamma": 0.99, "q_temperature": 2.0, "whole_first": true,
     "training": {...timesteps, episodes, seconds, created...}}

``whole_first``: trained on the replay's whole-first state, so the loop asks it "the whole question now, or
ask the planner?" before its first plan (absent in older checkpoints: false).

``model.zip`` is what stable-baselines3's ``DQN.save`` writes (training resumes from it). Inference
reads only the online network's weights from it (or from ``q_net.pt``, the inference-only form
:func:`export_checkpoint` writes and a checkpoint shipped in the package holds): the ``q_net.*`` tensors of ``policy.pth`` (the
state dict of :class:`~hydra_vr.controller.qnet.MaskedQNetwork` under the policy's ``q_net``), with
the hidden layer sizes read off their shapes. It never unpickles the archive's ``data`` (which names
the training policy class), so loading needs neither the training code nor SB3's ``DQN``.
"""

from __future__ import annotations

import io
import json
import pickle
import re
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra_vr.controller.observation import observation_dim

if TYPE_CHECKING:
    import torch

    from hydra_vr.controller.qnet import MaskedQNetwork

FORMAT = "hydra-vr-dqn"
VERSION = 1
MODEL_FILE = "model.zip"
META_FILE = "meta.json"
POLICY_FILE = "policy.pth"  # inside MODEL_FILE: the SB3 policy's state dict
WEIGHTS_FILE = "q_net.pt"  # inference only: the online network's state dict, without the training state
SHIPPED_DIR = Path(__file__).parent / "shipped"  # the checkpoint installed with the package, when there is one
Q_NET_PREFIX = "q_net."  # the online network; "q_net_target." is the training-only target copy
LINEAR_WEIGHT = re.compile(r"q_net\.(\d+)\.weight")  # QNetwork's nn.Sequential: Linear, ReLU, Linear, ...


class CheckpointError(ValueError):
    """A checkpoint is missing, unreadable, or does not fit the configuration it is used with."""


class CheckpointMismatchError(CheckpointError):
    """The checkpoint was trained for another embedding model or another number of options."""


@dataclass
class CheckpointMeta:
    embedding_name: str
    embedding_dim: int
    num_options: int
    memory_chars: int
    reward: dict[str, float]
    reward_scale: float
    gamma: float
    q_temperature: float
    training: dict[str, Any] = field(default_factory=dict)
    whole_first: bool = False

    @property
    def obs_dim(self) -> int:
        return observation_dim(self.embedding_dim, self.num_options)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {"format": FORMAT, "version": VERSION,
                "embedding": {"name": data.pop("embedding_name"), "dim": data.pop("embedding_dim")},
                "obs_dim": self.obs_dim, **data}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckpointMeta:
        if data.get("format") != FORMAT or data.get("version") != VERSION:
            raise CheckpointError(f"not a {FORMAT} v{VERSION} checkpoint (format {data.get('format')!r}, version {data.get('version')!r})")
        try:
            return cls(embedding_name=data["embedding"]["name"], embedding_dim=int(data["embedding"]["dim"]),
                       num_options=int(data["num_options"]), memory_chars=int(data["memory_chars"]),
                       reward=dict(data["reward"]), reward_scale=float(data["reward_scale"]), gamma=float(data["gamma"]),
                       q_temperature=float(data["q_temperature"]), training=dict(data.get("training") or {}),
                       whole_first=bool(data.get("whole_first", False)))
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"checkpoint meta.json lacks or garbles a field: {exc}") from exc

    def check_compatible(self, *, embedding_name: str | None = None, embedding_dim: int | None = None,
                         num_options: int | None = None, where: str = "the configuration") -> None:
        """Raise :class:`CheckpointMismatchError` naming both sides when anything differs."""
        problems = []
        if embedding_name is not None and embedding_name != self.embedding_name:
            problems.append(f"embedding model {self.embedding_name!r} (checkpoint) vs {embedding_name!r} ({where})")
        if embedding_dim is not None and embedding_dim != self.embedding_dim:
            problems.append(f"embedding dimension {self.embedding_dim} (checkpoint) vs {embedding_dim} ({where})")
        if num_options is not None and num_options != self.num_options:
            problems.append(f"number of options N = {self.num_options} (checkpoint) vs {num_options} ({where}, agent.num_options)")
        if problems:
            raise CheckpointMismatchError(
                "this controller checkpoint does not fit: " + "; ".join(problems)
                + ". Use the embedding backend and agent.num_options it was trained with, or train a new one.")


@dataclass
class LoadedCheckpoint:
    q_net: MaskedQNetwork  # CPU, eval mode
    meta: CheckpointMeta
    path: Path


def save_checkpoint(model: Any, meta: CheckpointMeta, out_dir: Path | str) -> Path:
    """Write ``model`` (a stable-baselines3 DQN whose policy's ``q_net`` is a MaskedQNetwork) and ``meta``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save(str(out / MODEL_FILE))
    (out / META_FILE).write_text(json.dumps(meta.to_dict(), indent=2) + "\n")
    return out


def read_meta(path: Path | str) -> CheckpointMeta:
    path = Path(path)
    meta_file = path / META_FILE
    if not meta_file.is_file():
        raise CheckpointError(f"{path} is not a controller checkpoint directory (no {META_FILE}); "
                              "pass the --out directory of hydra-vr train-controller")
    try:
        return CheckpointMeta.from_dict(json.loads(meta_file.read_text()))
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"{meta_file}: not JSON: {exc}") from exc


def load_checkpoint(path: Path | str, *, embedding_name: str | None = None, embedding_dim: int | None = None,
                    num_options: int | None = None, where: str = "the configuration") -> LoadedCheckpoint:
    """Read meta.json, refuse a mismatch (before reading any weights), then load the Q-network on CPU from
    ``model.zip`` or, where only the inference weights were kept, ``q_net.pt``."""
    path = Path(path)
    meta = read_meta(path)
    meta.check_compatible(embedding_name=embedding_name, embedding_dim=embedding_dim, num_options=num_options, where=where)
    if (path / MODEL_FILE).is_file():
        return LoadedCheckpoint(read_q_network(path / MODEL_FILE, meta), meta, path)
    if (path / WEIGHTS_FILE).is_file():
        return LoadedCheckpoint(_network(_weights_file(path / WEIGHTS_FILE), meta, path / WEIGHTS_FILE), meta, path)
    raise CheckpointError(f"{path}: neither {MODEL_FILE} nor {WEIGHTS_FILE} is there")


def read_q_network(model_zip: Path, meta: CheckpointMeta) -> MaskedQNetwork:
    """The online Q-network of an SB3 ``model.zip``, checked against ``meta`` (input size, N + 1 outputs)."""
    return _network(_q_net_weights(model_zip), meta, model_zip)


def _network(weights: dict[str, torch.Tensor], meta: CheckpointMeta, source: Path) -> MaskedQNetwork:
    """The Q-network ``weights`` (its state dict) describe, its hidden sizes read off their shapes."""
    from hydra_vr.controller.qnet import build_q_network

    layers = sorted((int(m.group(1)), tensor) for key, tensor in weights.items()
                    if (m := LINEAR_WEIGHT.fullmatch(key)) and tensor.ndim == 2)
    if not layers:
        raise CheckpointError(f"{source}: holds no Q-network layer ({Q_NET_PREFIX}q_net.<i>.weight)")
    in_dim, out_dim = int(layers[0][1].shape[1]), int(layers[-1][1].shape[0])
    if in_dim != meta.obs_dim or out_dim != meta.num_options + 1:
        raise CheckpointError(f"{source.parent}: the network (obs {in_dim}, {out_dim} actions) disagrees with meta.json "
                              f"(obs {meta.obs_dim}, {meta.num_options + 1} actions)")
    net = build_q_network(meta.obs_dim, meta.num_options, [int(w.shape[0]) for _, w in layers[:-1]])
    try:
        net.load_state_dict({key: tensor.float() for key, tensor in weights.items()}, strict=True)
    except RuntimeError as exc:  # missing, unexpected or misshapen tensors
        raise CheckpointError(f"{source}: the weights do not fit the controller's Q-network: {exc}") from exc
    return net


def export_checkpoint(src: Path | str, dst: Path | str, *, half: bool = True) -> Path:
    """Write the inference-only form of the checkpoint at ``src`` to ``dst``: its meta.json and the online
    Q-network's weights (``q_net.pt``; float16 with ``half``, which halves the file again and moves Q-values by
    under 1e-4 of the largest). Neither the target network nor the optimiser state comes along, so training
    cannot resume from it; :func:`load_checkpoint` reads it like the original."""
    import torch

    loaded = load_checkpoint(src)
    out = Path(dst)
    out.mkdir(parents=True, exist_ok=True)
    state = {key: (t.half() if half and t.is_floating_point() else t).contiguous()
             for key, t in loaded.q_net.state_dict().items()}
    torch.save(state, out / WEIGHTS_FILE)
    (out / META_FILE).write_text(json.dumps(loaded.meta.to_dict(), indent=2) + "\n")
    return out


def shipped_checkpoint() -> Path | None:
    """The controller checkpoint installed with the package (``hydra_vr/controller/shipped``), or None."""
    return SHIPPED_DIR if (SHIPPED_DIR / META_FILE).is_file() else None


def _weights_file(path: Path) -> dict[str, torch.Tensor]:
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, pickle.UnpicklingError, EOFError, ValueError, OSError) as exc:
        raise CheckpointError(f"{path}: unreadable: {exc}") from exc
    if not isinstance(state, dict):
        raise CheckpointError(f"{path}: not a state dict")
    return state


def _q_net_weights(model_zip: Path) -> dict[str, torch.Tensor]:
    import torch

    try:
        with zipfile.ZipFile(model_zip) as archive:
            raw = archive.read(POLICY_FILE)
    except (zipfile.BadZipFile, KeyError, OSError) as exc:
        raise CheckpointError(f"{model_zip}: not a stable-baselines3 model archive with {POLICY_FILE}: {exc}") from exc
    try:
        # weights_only: tensors and containers, never arbitrary pickled objects
        state = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except (RuntimeError, pickle.UnpicklingError, EOFError, ValueError) as exc:
        raise CheckpointError(f"{model_zip}: {POLICY_FILE} is unreadable: {exc}") from exc
    if not isinstance(state, dict):
        raise CheckpointError(f"{model_zip}: {POLICY_FILE} is not a state dict")
    return {key[len(Q_NET_PREFIX):]: tensor for key, tensor in state.items() if key.startswith(Q_NET_PREFIX)}
