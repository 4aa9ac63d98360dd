"""The Ray actor pool's bookkeeping (re-queue, blame, poison, stall), against a small in-process
stand-in for the few Ray calls it makes, so every interleaving here is deterministic. The real
cluster is exercised in tests/test_ray_cluster.py."""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

import pytest

from hydra_vr.scale import ClusterError, RaySettings
from hydra_vr.scale.pool import RayPool, WorkerCallError


class RayActorError(Exception):
    actor_init_failed = False


class ActorDiedError(RayActorError):
    pass


class RayTaskError(Exception):
    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class Die(BaseException):
    """Raised by a test function: the actor process dies while running this call."""


class Ref:
    _ids = itertools.count()

    def __init__(self, actor: FakeActor, method: str, args: tuple) -> None:
        self.id, self.actor, self.method, self.args = next(self._ids), actor, method, args
        self.done, self.value, self.error = False, None, None

    def __hash__(self) -> int:
        return self.id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ref) and other.id == self.id


class FakeActor:
    """Runs its calls in order, one per step; ``Die`` kills it: every queued call fails, the
    process restarts empty. ``lose_reply``: the call finished just before a death fails too
    (its reply never left the dying process)."""

    def __init__(self, ray: FakeRay, fn: Any) -> None:
        self.ray, self.fn, self.queue, self.last_done = ray, fn, [], None
        self.dead_for = 0  # steps during which pings fail (restarting, or forever with -1)
        self.call = SimpleNamespace(remote=lambda item: self._submit("call", (item,)))
        self.ready = SimpleNamespace(remote=lambda: self._submit("ready", ()))

    def _submit(self, method: str, args: tuple) -> Ref:
        ref = Ref(self, method, args)
        if method == "call" and self.dead_for:
            ref.done, ref.error = True, ActorDiedError("actor is restarting")
        else:
            self.queue.append(ref)
        return ref

    def step(self) -> None:
        if self.dead_for:
            for ref in self.queue:
                ref.done, ref.error = True, ActorDiedError("actor is dead")
            self.queue = []
            self.dead_for = self.dead_for - 1 if self.dead_for > 0 else -1
            return
        if not self.queue:
            return
        ref = self.queue.pop(0)
        if ref.method == "ready":
            ref.done, ref.value = True, 1
            return
        try:
            ref.value = self.fn(*ref.args)
        except Die:
            failed = [ref, *self.queue]
            if self.ray.lose_reply and self.last_done is not None and self.last_done.error is None:
                failed.insert(0, self.last_done)
            for r in failed:
                r.done, r.value, r.error = True, None, ActorDiedError("the actor process died")
            self.queue, self.last_done = [], None
            self.dead_for = self.ray.restart_steps
            return
        except Exception as exc:
            ref.error = RayTaskError(exc)
        ref.done = True
        self.last_done = ref


class FakeRay:
    def __init__(self, *, lose_reply: bool = False, restart_steps: int = 1, cpus: float = 8.0) -> None:
        self.lose_reply, self.restart_steps, self.cpus = lose_reply, restart_steps, cpus
        self.actors: list[FakeActor] = []
        self.exceptions = SimpleNamespace(RayActorError=RayActorError, ActorDiedError=ActorDiedError,
                                          RayTaskError=RayTaskError)
        self.killed = 0

    def remote(self, cls: type) -> Any:
        ray = self

        class _Options:
            def options(self, **_: Any) -> Any:
                return SimpleNamespace(remote=lambda fn: ray._new(fn))

        return _Options()

    def _new(self, fn: Any) -> FakeActor:
        actor = FakeActor(self, fn)
        self.actors.append(actor)
        return actor

    def nodes(self) -> list[dict[str, Any]]:
        return [{"Alive": True, "Resources": {"CPU": self.cpus, "memory": 8e9}},
                {"Alive": False, "Resources": {"CPU": 64.0}}]  # a dead node holds nothing

    def kill(self, actor: FakeActor, no_restart: bool = True) -> None:
        self.killed += 1

    def wait(self, refs: list[Ref], num_returns: int = 1, timeout: float | None = None) -> tuple[list[Ref], list[Ref]]:
        for _ in range(100):
            ready = [r for r in refs if r.done]
            if len(ready) >= num_returns or timeout == 0:
                return ready[:max(num_returns, len(ready))], [r for r in refs if not r.done]
            for actor in self.actors:
                actor.step()
        return [r for r in refs if r.done], [r for r in refs if not r.done]

    @staticmethod
    def get(ref: Ref) -> Any:
        assert ref.done
        if ref.error is not None:
            raise ref.error
        return ref.value


def double_unless_poison(item: int) -> int:
    if item == 3:
        raise Die
    return 2 * item


def _run(ray: FakeRay, items: list[int], fn: Any = double_unless_poison, **settings: Any) -> list[Any]:
    settings = {"address": "local", "workers": 2, **settings}
    with RayPool(ray, RaySettings(**settings), fn, key=str, on_poison=lambda item, why: ("poison", item, why)) as pool:
        out = list(pool.run(items))
    assert ray.killed == settings["workers"]  # every actor is stopped at the end
    return out


@pytest.mark.parametrize("lose_reply", [False, True])
@pytest.mark.parametrize("max_tries", [1, 2])
def test_poison_sample_is_given_up_and_its_neighbours_never_blamed(lose_reply, max_tries):
    # max_tries=1: one wrong blame of a sample queued behind the poison one would lose it.
    out = _run(FakeRay(lose_reply=lose_reply), list(range(8)), max_tries=max_tries)
    good = sorted(r for r in out if not isinstance(r, tuple))
    assert good == [2 * i for i in range(8) if i != 3]  # every other sample exactly once
    poisoned = [r for r in out if isinstance(r, tuple)]
    assert len(poisoned) == 1 and poisoned[0][1] == 3
    assert f"died {max_tries} time(s)" in poisoned[0][2] and f"max_tries={max_tries}" in poisoned[0][2]


def test_a_worker_that_dies_once_loses_nothing():
    calls: dict[int, int] = {}

    def flaky(item: int) -> int:
        calls[item] = calls.get(item, 0) + 1
        if item == 5 and calls[item] == 1:
            raise Die  # dies the first time only (a node lost mid-sample)
        return item

    out = _run(FakeRay(lose_reply=True), list(range(10)), flaky)
    assert sorted(out) == list(range(10)) and calls[5] == 2  # re-queued, done once, nothing lost or doubled


def test_an_exception_in_the_function_stops_the_run():
    def broken(item: int) -> int:
        raise ValueError("model file missing on this node")

    with pytest.raises(WorkerCallError, match="ValueError: model file missing"):
        _run(FakeRay(), [1, 2], broken)


def test_an_actor_no_node_can_hold_is_refused():
    with pytest.raises(ClusterError, match="no node of this cluster can hold"):
        _run(FakeRay(cpus=1.0), [1], num_cpus=2.0)
    with pytest.raises(ClusterError, match="no node of this cluster can hold"):
        _run(FakeRay(), [1], resources={"big_memory": 1.0})
    assert _run(FakeRay(cpus=2.0), [1], num_cpus=2.0) == [2]


def test_no_live_actor_for_too_long_stops_the_run():
    ray = FakeRay(restart_steps=-1)  # dead for good after the first death

    with pytest.raises(ClusterError, match="no worker actor has been alive"):
        _run(ray, [3, 3, 4], workers=1, max_tries=5, stall_timeout_s=0.01)


def test_settings_are_checked():
    with pytest.raises(ValueError, match="workers must be >= 1"):
        RaySettings(address="auto", workers=0)
    with pytest.raises(ValueError, match="max_tries"):
        RaySettings(address="auto", max_tries=0)
    assert RaySettings(address="x:1", memory_mb=100, resources={"big": 1}).actor_options() == {
        "num_cpus": 1.0, "num_gpus": 0.0, "memory": 100 * 1024 * 1024, "resources": {"big": 1}}


def test_record_writes_given_up_samples_apart_and_skips_them_on_resume(tmp_path, photo, monkeypatch):
    """record --ray: the driver alone writes; a poison sample goes to EPISODES.errors.jsonl, not
    into the episode file, and a rerun neither records nor retries it (the pool is replaced by an
    in-process stand-in that records for real and gives up one sample)."""
    import json

    import yaml
    from typer.testing import CliRunner

    import hydra_vr.cli.record_cmd as record_cmd
    from hydra_vr.cli.main import app
    from hydra_vr.training.episodes import iter_episodes
    from hydra_vr.training.recorder import record_with_spec

    sent: list[str] = []

    def fake_ray_episodes(spec, dataset, pending, cluster):
        assert cluster.address == "10.0.0.1:6379" and cluster.workers == 2 and cluster.max_tries == 2
        for sample in pending:
            sent.append(sample.id)
            yield {"id": sample.id, "error": "its worker died 2 time(s)"} if sample.id == "b" else \
                record_with_spec(spec, dataset, sample)

    monkeypatch.setattr(record_cmd, "_ray_episodes", fake_ray_episodes)
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": i, "image": str(photo("astronaut")), "question": "Who is it?",
                                        "answers": ["astronaut"]}) + "\n" for i in "abc"))
    plan = json.dumps({"instructions": [{"instruction": "Answer", "probability": 1.0}], "answer": ""})
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({"agent": {"mode": "no_rl", "max_steps": 1, "num_options": 1},
                                   "llm": {"backend": "scripted", "options": {"rules": [
                                       ["Instruction:", "```python\nfinal_answer = 'astronaut'\n```"], ["Reply:", plan]]}}}))
    out = tmp_path / "episodes.jsonl"
    args = ["record", "--dataset", "user", "--data-root", str(data), "--out", str(out), "--config", str(cfg),
            "--explore", "chosen", "--no-progress", "--ray", "10.0.0.1:6379", "--workers", "2", "--max-tries", "2"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert sorted(ep.id for ep in iter_episodes(out)) == ["a", "c"]  # the episode file stays loadable
    errors = [json.loads(line) for line in (tmp_path / "episodes.jsonl.errors.jsonl").read_text().splitlines()]
    assert errors == [{"id": "b", "error": "its worker died 2 time(s)"}]
    assert "delete it to retry them" in first.output
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and "3 recorded before (1 of them given up" in again.output and "0 to record" in again.output
    assert sent == ["a", "b", "c"]  # nothing sent twice
