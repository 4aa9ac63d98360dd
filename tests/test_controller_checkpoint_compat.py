"""Checkpoints written before the checkpoint format moved into hydra_vr.controller still load.

``fixtures/controller/dqn_v1_n3`` was written by ``hydra-vr train-controller`` at commit 3885493 (the
checkpoint code then lived in hydra_vr.training), on ``fixtures/episodes/synthetic_minilm_n3.jsonl``
with ``dqn.hidden=[6]`` to keep it small; ``expected.json`` holds the Q-values and greedy choices
that code computed (see the fixture's README.md). The current loader must reproduce them.
"""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from hydra_vr.controller.base import ControllerState
from hydra_vr.controller.checkpoint import CheckpointError, CheckpointMismatchError, load_checkpoint
from hydra_vr.controller.dqn import DQNController, q_values, select_action
from hydra_vr.controller.qnet import MaskedQNetwork
from hydra_vr.training.episodes import RecordedEpisode, load_episodes
from hydra_vr.training.replay_env import ReplayEnv

FIXTURES = Path(__file__).parent / "fixtures"
OLD = FIXTURES / "controller" / "dqn_v1_n3"
EPISODES = FIXTURES / "episodes" / "synthetic_minilm_n3.jsonl"
EXPECTED = json.loads((OLD / "expected.json").read_text())


class TableEmbedder:
    """The fixture episodes' stored vectors, looked up by text (what MiniLM returned when they were recorded)."""

    name, dim = "minilm:all-MiniLM-L6-v2", 384

    def __init__(self, episodes: list[RecordedEpisode]) -> None:
        self.table: dict[str, np.ndarray] = {}
        for ep in episodes:
            self.table[ep.query] = ep.query_vec
            for step in ep.steps:
                self.table[step.memory] = step.memory_vec
                for rnd in step.rounds:
                    self.table.update({o.instruction: o.vec for o in rnd.options})

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts]).astype(np.float32)


def test_old_checkpoint_gives_the_recorded_q_values_and_choices_on_replayed_observations():
    ck = load_checkpoint(OLD, embedding_name="minilm:all-MiniLM-L6-v2", embedding_dim=384, num_options=3)
    assert isinstance(ck.q_net, MaskedQNetwork) and not ck.q_net.training
    n, scale, temp = ck.meta.num_options, ck.meta.reward_scale, ck.meta.q_temperature
    env = ReplayEnv(load_episodes([EPISODES]))
    seen = []
    for i in range(len(env.episodes)):  # the walk of the recording: each episode, following the planner
        obs, info = env.reset(options={"episode": i})
        done = False
        while not done:
            q = q_values(ck.q_net, obs, scale)
            replan_allowed = bool(info["action_mask"][-1])
            seen.append({"episode": i, "step": int(info["step"]), "q": q,
                         "q_x_p": select_action(q, info["probabilities"], n, replan_allowed=replan_allowed, temperature=temp),
                         "argmax_q": select_action(q, info["probabilities"], n, replan_allowed=replan_allowed,
                                                   temperature=temp, use_probabilities=False)})
            obs, _, terminated, truncated, info = env.step(int(np.argmax(info["probabilities"])))
            done = terminated or truncated
    expected = EXPECTED["replay"]
    assert [(s["episode"], s["step"]) for s in seen] == [(e["episode"], e["step"]) for e in expected]
    np.testing.assert_allclose(np.stack([s["q"] for s in seen]), np.array([e["q"] for e in expected]), rtol=1e-5, atol=1e-3)
    assert [s["q_x_p"] for s in seen] == [e["q_x_p"] for e in expected]
    assert [s["argmax_q"] for s in seen] == [e["argmax_q"] for e in expected]
    assert len({e["q_x_p"] for e in expected}) == 4  # every slot and REPLAN is chosen somewhere: the check discriminates


def test_old_checkpoint_drives_the_controller_as_before():
    episodes = load_episodes([EPISODES])
    controller = DQNController(OLD, embedder=TableEmbedder(episodes))
    got, expected = [], EXPECTED["controller"]
    for case in expected:
        ep = episodes[case["episode"]]
        step = next(s for s in ep.steps if s.step == case["step"])
        rnd = step.rounds[case["round"]]
        options = [o.instruction for o in rnd.options]
        state = ControllerState(query=ep.query, memory_text=step.memory, step=step.step, replans=case["round"],
                                max_replans=case["max_replans"])
        np.testing.assert_allclose(controller.q_values(options, rnd.probabilities, state), case["q"], rtol=1e-5, atol=1e-3)
        got.append(controller.select(options, rnd.probabilities, state))
    assert got == [c["choice"] for c in expected]
    assert {c["choice"] for c in expected} == {-1, 0, 1, 2}


def test_old_checkpoint_still_loads_as_an_sb3_model():
    """model.zip pickles the training policy class by name: DQN.load (resuming training) still finds it."""
    from stable_baselines3 import DQN

    from hydra_vr.training.masked_dqn import MaskedDQNPolicy

    model = DQN.load(str(OLD / "model.zip"), device="cpu")
    assert isinstance(model.policy, MaskedDQNPolicy) and isinstance(model.policy.q_net, MaskedQNetwork)
    ck = load_checkpoint(OLD)
    obs, _ = ReplayEnv(load_episodes([EPISODES])).reset(options={"episode": 0})
    assert np.array_equal(q_values(model.policy.q_net, obs, 0.01), q_values(ck.q_net, obs, 0.01))


def _copy_with_policy(tmp_path: Path, policy_bytes: bytes | None) -> Path:
    """The fixture checkpoint with model.zip's policy.pth replaced (or left out when None)."""
    out = tmp_path / "ckpt"
    out.mkdir(parents=True)
    shutil.copy(OLD / "meta.json", out / "meta.json")
    with zipfile.ZipFile(OLD / "model.zip") as src, zipfile.ZipFile(out / "model.zip", "w") as dst:
        for item in src.infolist():
            if item.filename != "policy.pth":
                dst.writestr(item, src.read(item))
        if policy_bytes is not None:
            dst.writestr("policy.pth", policy_bytes)
    return out


def test_broken_model_archives_are_clean_errors(tmp_path):
    with pytest.raises(CheckpointMismatchError, match=r"N = 3 \(checkpoint\) vs 5"):
        load_checkpoint(OLD, num_options=5)
    not_zip = tmp_path / "not_zip"
    shutil.copytree(OLD, not_zip)
    (not_zip / "model.zip").write_bytes(b"not a zip archive")
    with pytest.raises(CheckpointError, match="not a stable-baselines3 model archive"):
        load_checkpoint(not_zip)
    with pytest.raises(CheckpointError, match="not a stable-baselines3 model archive with policy.pth"):
        load_checkpoint(_copy_with_policy(tmp_path / "a", None))
    with zipfile.ZipFile(OLD / "model.zip") as src:
        policy = src.read("policy.pth")
    with pytest.raises(CheckpointError, match="policy.pth is unreadable"):
        load_checkpoint(_copy_with_policy(tmp_path / "b", policy[: len(policy) // 2]))

    state = torch.load(io.BytesIO(policy), weights_only=True)
    del state["q_net.q_net.2.bias"]  # the output layer without its bias
    buf = io.BytesIO()
    torch.save(state, buf)
    with pytest.raises(CheckpointError, match=r"(?s)do not fit the controller.s Q-network.*Missing key.*q_net\.2\.bias"):
        load_checkpoint(_copy_with_policy(tmp_path / "c", buf.getvalue()))
    buf = io.BytesIO()
    torch.save({k: v for k, v in state.items() if not k.startswith("q_net.")}, buf)
    with pytest.raises(CheckpointError, match="holds no Q-network layer"):
        load_checkpoint(_copy_with_policy(tmp_path / "d", buf.getvalue()))


def _controller_rows(checkpoint: Path) -> tuple[list[np.ndarray], list[int]]:
    """Q-values and choices of a DQNController from ``checkpoint`` on the fixture's recorded rounds."""
    episodes = load_episodes([EPISODES])
    controller = DQNController(checkpoint, embedder=TableEmbedder(episodes))
    qs, choices = [], []
    for case in EXPECTED["controller"]:
        ep = episodes[case["episode"]]
        step = next(s for s in ep.steps if s.step == case["step"])
        rnd = step.rounds[case["round"]]
        state = ControllerState(query=ep.query, memory_text=step.memory, step=step.step, replans=case["round"],
                                max_replans=case["max_replans"])
        options = [o.instruction for o in rnd.options]
        qs.append(controller.q_values(options, rnd.probabilities, state))
        choices.append(controller.select(options, rnd.probabilities, state))
    return qs, choices


def test_an_exported_checkpoint_is_small_and_chooses_as_the_original(tmp_path):
    from hydra_vr.controller.checkpoint import WEIGHTS_FILE, export_checkpoint

    full = export_checkpoint(OLD, tmp_path / "full", half=False)
    half = export_checkpoint(OLD, tmp_path / "half")
    assert sorted(p.name for p in half.iterdir()) == ["meta.json", WEIGHTS_FILE]  # no model.zip: nothing to train on
    assert (half / WEIGHTS_FILE).stat().st_size < (full / WEIGHTS_FILE).stat().st_size < (OLD / "model.zip").stat().st_size
    expected_q = [c["q"] for c in EXPECTED["controller"]]
    q_full, choices_full = _controller_rows(full)
    np.testing.assert_allclose(q_full, expected_q, rtol=1e-5, atol=1e-3)
    assert choices_full == [c["choice"] for c in EXPECTED["controller"]]
    q_half, _ = _controller_rows(half)
    scale = np.abs(expected_q).max()
    assert np.abs(np.array(q_half) - np.array(expected_q)).max() < 1e-2 * scale
    assert load_checkpoint(half).meta == load_checkpoint(OLD).meta


def test_a_checkpoint_without_weights_or_with_broken_ones_is_a_clean_error(tmp_path):
    from hydra_vr.controller.checkpoint import WEIGHTS_FILE, export_checkpoint

    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(OLD / "meta.json", bare / "meta.json")
    with pytest.raises(CheckpointError, match=f"neither model.zip nor {WEIGHTS_FILE}"):
        load_checkpoint(bare)
    broken = export_checkpoint(OLD, tmp_path / "broken")
    (broken / WEIGHTS_FILE).write_bytes(b"\x00garbage")
    with pytest.raises(CheckpointError, match=f"{WEIGHTS_FILE}: unreadable"):
        load_checkpoint(broken)
    with pytest.raises(CheckpointMismatchError, match=r"N = 3 \(checkpoint\) vs 5"):
        load_checkpoint(export_checkpoint(OLD, tmp_path / "n3"), num_options=5)


def test_mode_full_uses_the_shipped_checkpoint_when_the_package_has_one(tmp_path, monkeypatch):
    from hydra_vr.config import ConfigError, load_config
    from hydra_vr.controller import checkpoint as ckpt_mod
    from hydra_vr.controller.checkpoint import export_checkpoint
    from hydra_vr.factory import controller_checkpoint

    cfg = load_config("default", ["agent.mode=full", "agent.num_options=3"])
    monkeypatch.setattr(ckpt_mod, "SHIPPED_DIR", tmp_path / "shipped")
    with pytest.raises(ConfigError, match="this install ships none"):
        controller_checkpoint(cfg, None)
    export_checkpoint(OLD, tmp_path / "shipped")
    assert controller_checkpoint(cfg, None) == str(tmp_path / "shipped")
    assert controller_checkpoint(cfg, "mine") == "mine"  # --controller wins
    assert controller_checkpoint(load_config("default", []), None) is None  # no_rl: the planner's probabilities


def test_export_controller_command(tmp_path):
    from typer.testing import CliRunner

    from hydra_vr.cli.main import app

    ok = CliRunner().invoke(app, ["export-controller", str(OLD), str(tmp_path / "small")])
    assert ok.exit_code == 0 and "q_net.pt" in ok.output, ok.output
    assert load_checkpoint(tmp_path / "small").meta.num_options == 3
    bad = CliRunner().invoke(app, ["export-controller", str(tmp_path), str(tmp_path / "x")])
    assert bad.exit_code == 2 and "no meta.json" in bad.output


def test_the_shipped_controller_fits_the_default_profile_and_chooses_by_its_q_values():
    import numpy as np

    from hydra_vr.agent.strategies.hydra import WHOLE_QUERY
    from hydra_vr.config import load_config
    from hydra_vr.controller.base import ControllerState
    from hydra_vr.controller.checkpoint import shipped_checkpoint
    from hydra_vr.factory import build_controller

    shipped = shipped_checkpoint()
    assert shipped is not None, "the package ships no controller: --mode full would need --controller"
    meta = load_checkpoint(shipped).meta
    assert meta.num_options == load_config("default").agent.num_options  # the default profile can load it
    controller = build_controller(load_config("default", ["agent.mode=full"]))  # no --controller: the shipped one
    state = ControllerState(query="Which animal sits on the fence?", memory_text="", step=1)
    options = [WHOLE_QUERY, "Find the fence", "Ask what animal is in the image"]
    q = np.asarray(controller.q_values(options, [0.5, 0.3, 0.2], state))
    assert q.shape == (meta.num_options + 1,) and np.isfinite(q).all() and np.ptp(q[:3]) > 0  # options differ
    from dataclasses import replace

    from hydra_vr.controller.base import REPLAN
    from hydra_vr.controller.dqn import select_action

    # its choice is the selection rule's on its own Q-values (REPLAN is the last slot); with no replan left, an option
    rule = select_action(q, [0.5, 0.3, 0.2], meta.num_options, replan_allowed=True, temperature=meta.q_temperature)
    assert controller.select(options, [0.5, 0.3, 0.2], state) == (REPLAN if rule == meta.num_options else rule)
    assert controller.select(options, [0.5, 0.3, 0.2], replace(state, replans=state.max_replans)) in (0, 1, 2)
