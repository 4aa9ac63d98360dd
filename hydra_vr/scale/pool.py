"""A pool of plain Ray actors, one per worker slot, fed by the driver with a bounded queue.

Why plain actors and not Ray Data or ``max_task_retries``: each actor loads its models once and
keeps them; the driver decides what to do when one dies. An actor dying (its process, or its
whole node) fails its in-flight calls with an actor error; the driver puts those samples back
in its queue, stops sending to that actor, and pings it until Ray has restarted it (actors are
created with unlimited restarts). A death is charged to a sample only when that sample was the
actor's one call in flight (the others lost with it become suspects, re-run alone), so a sample
that kills its worker every time is given up after ``max_tries`` and handed to ``on_poison``
instead of being retried forever, and a sample merely queued behind it is never blamed. Ray's own task retries are off: with no spare capacity left they can wait forever.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Generic, TypeVar

from hydra_vr.scale.settings import ClusterError, RaySettings

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")
_WAIT_S = 0.5  # how often the driver looks at pings and the stall clock while nothing finishes
_PING_RETRY_S = 1.0


class WorkerCallError(ClusterError):
    """The per-item function raised on a worker (not a worker death): the run's failure, not the item's."""


class _Worker:
    """The actor body: holds the per-item function (and, through it, the models) for its lifetime."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self._fn = fn

    def ready(self) -> int:
        return os.getpid()

    def call(self, item: Any) -> Any:
        return self._fn(item)


@dataclass
class PoolStats:
    workers: int
    live: int = 0
    worker_failures: int = 0  # times an actor was seen dead or unreachable
    requeued: int = 0  # in-flight items put back in the queue
    poisoned: int = 0  # items given up after max_tries

    def describe(self) -> str:
        text = f"actors {self.live}/{self.workers}"
        if self.worker_failures:
            text += f", {self.worker_failures} worker failure(s), {self.requeued} re-queued"
        return text


@dataclass
class _Slot:
    index: int
    actor: Any
    live: bool = False
    inflight: list[Any] = field(default_factory=list)  # refs, oldest first
    ping: Any = None
    next_ping: float = 0.0
    isolated: bool = False  # running a suspect alone: nothing is queued behind it


class RayPool(Generic[T, R]):
    """``with RayPool(ray, settings, fn, key=..., on_poison=...) as pool: for r in pool.run(items)``.

    ``fn(item)`` runs on an actor and must pickle (a module-level function or a partial of one);
    ``key(item)`` names an item for try counting and logs; ``on_poison(item, reason)`` makes the
    result of an item given up after ``settings.max_tries`` worker deaths (runs on the driver).
    Results come in completion order, each item's exactly once.
    """

    def __init__(self, ray: ModuleType, settings: RaySettings, fn: Callable[[T], R], *,
                 key: Callable[[T], str], on_poison: Callable[[T, str], R]) -> None:
        self.ray, self.settings, self.fn = ray, settings, fn
        self.key, self.on_poison = key, on_poison
        self.stats = PoolStats(settings.workers)
        self._slots: list[_Slot] = []
        self._last_error = ""
        errors = ray.exceptions
        # What a dead or unreachable actor or node looks like to its caller; anything else the
        # function raised is a RayTaskError and means the function itself failed.
        self._worker_lost: tuple[type[BaseException], ...] = tuple(
            e for e in (getattr(errors, n, None) for n in (
                "RayActorError", "ActorDiedError", "ActorUnavailableError", "WorkerCrashedError",
                "ObjectLostError", "OwnerDiedError", "NodeDiedError", "OutOfMemoryError")) if e is not None)

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> RayPool[T, R]:
        self._check_capacity()
        actor_class = self.ray.remote(_Worker).options(
            max_restarts=-1, max_task_retries=0, max_concurrency=1, **self.settings.actor_options())
        self._slots = [_Slot(i, actor_class.remote(self.fn)) for i in range(self.settings.workers)]
        return self

    def __exit__(self, *exc: object) -> None:
        for slot in self._slots:
            try:
                self.ray.kill(slot.actor, no_restart=True)
            except Exception as err:  # already gone with its node: nothing to stop
                log.debug("kill actor %d: %s", slot.index, err)
        self._slots = []

    def _check_capacity(self) -> None:
        """Refuse at once an actor that no live node could ever place (e.g. a GPU on a CPU cluster)."""
        asked = {"CPU": self.settings.num_cpus, "GPU": self.settings.num_gpus, **self.settings.resources}
        if self.settings.memory_mb:
            asked["memory"] = self.settings.memory_mb * 1024 * 1024
        asked = {k: v for k, v in asked.items() if v > 0}
        nodes = [node.get("Resources", {}) for node in self.ray.nodes() if node.get("Alive")]
        if any(all(res.get(k, 0) >= v for k, v in asked.items()) for res in nodes):
            return
        largest = {k: max((res.get(k, 0) for res in nodes), default=0) for k in asked}
        raise ClusterError(f"no node of this cluster can hold one worker actor: it asks for {asked}, the largest "
                           f"amounts any node has are {largest}; lower the per-actor resources")

    # ------------------------------------------------------------------ the loop
    def run(self, items: Iterable[T]) -> Iterator[R]:
        ray, s = self.ray, self.settings
        queue: deque[T] = deque(items)
        owner: dict[Any, tuple[_Slot, T]] = {}  # in-flight ref -> (slot, item)
        tries: Counter[str] = Counter()
        suspects: set[str] = set()  # were in flight on an actor that died: from now on sent alone
        done: set[str] = set()
        last_live = time.monotonic()
        while queue or owner:
            now = time.monotonic()
            self._ping_down_slots(now)
            live = [slot for slot in self._slots if slot.live]
            self.stats.live = len(live)
            if live:
                last_live = now
            elif now - last_live > s.stall_timeout_s:
                raise ClusterError(
                    f"no worker actor has been alive for {s.stall_timeout_s:.0f} s ({len(queue) + len(owner)} "
                    "sample(s) left): the cluster has no room for one (nodes lost?) or it cannot start "
                    f"(last error: {self._last_error or 'none'}); finished samples are saved")
            for slot in live:  # fill each live actor up to its in-flight bound; a suspect goes alone
                while queue and len(slot.inflight) < s.inflight_per_actor and not slot.isolated:
                    suspect = self.key(queue[0]) in suspects
                    if suspect and slot.inflight:
                        break  # it waits for an idle actor
                    item = queue.popleft()
                    ref = slot.actor.call.remote(item)
                    slot.inflight.append(ref)
                    slot.isolated = suspect
                    owner[ref] = (slot, item)
                    log.debug("sent %s to actor %d%s", self.key(item), slot.index, " alone" if suspect else "")
            waiting = [*owner, *(slot.ping for slot in self._slots if slot.ping is not None)]
            if not waiting:  # every actor down, its next ping not yet due
                time.sleep(_WAIT_S)
                continue
            ready, _ = ray.wait(waiting, num_returns=1, timeout=_WAIT_S)
            for ref in ready:
                if any(slot.ping is ref for slot in self._slots):
                    self._ping_answered(ref)
                    continue
                if ref not in owner:  # a call of an actor already handled as dead: re-queued then
                    continue
                slot, item = owner[ref]
                try:
                    result = ray.get(ref)
                except self._worker_lost as exc:
                    self._lost(slot, exc)
                    finished, lost = self._drain(slot, ref, owner)
                    for done_item, value in finished:
                        yield from self._deliver(self.key(done_item), value, done)
                    for lost_item in lost:
                        key = self.key(lost_item)
                        charged = len(lost) == 1  # it ran alone (or was the only one left): it was running
                        suspects.add(key)
                        tries[key] += charged
                        log.debug("actor %d lost %s (charged %s, tries %d)", slot.index, key, charged, tries[key])
                        if tries[key] >= s.max_tries:
                            self.stats.poisoned += 1
                            reason = (f"its worker died {tries[key]} time(s) while running it "
                                      f"(last: {type(exc).__name__}); given up after max_tries={s.max_tries}")
                            log.warning("sample %s recorded as an error: %s", key, reason)
                            yield from self._deliver(key, self.on_poison(lost_item, reason), done)
                        else:
                            self.stats.requeued += 1
                            queue.appendleft(lost_item)
                    continue
                except ray.exceptions.RayTaskError as exc:
                    cause = exc.cause if getattr(exc, "cause", None) is not None else exc
                    raise WorkerCallError(f"worker failed on sample {self.key(item)}: {type(cause).__name__}: {cause}") from None
                del owner[ref]
                slot.inflight.remove(ref)
                slot.isolated = False
                yield from self._deliver(self.key(item), result, done)

    @staticmethod
    def _deliver(key: str, result: R, done: set[str]) -> Iterator[R]:
        if key in done:  # cannot happen with one live call per item; never write a sample twice
            log.warning("dropped a second result for sample %s", key)
            return
        done.add(key)
        yield result

    # ------------------------------------------------------------------ actor health
    def _drain(self, slot: _Slot, failed: Any, owner: dict[Any, tuple[_Slot, T]]) -> tuple[list[tuple[T, Any]], list[T]]:
        """Take every in-flight call off a dead actor: ``(finished (item, result), lost items)``.

        Which lost call killed it cannot be told when there were several: a process that dies
        right after finishing a call may never send that call's reply. So a try is charged only
        when one call was lost, and the others become suspects, each re-run alone, where a
        death is unambiguous.
        """
        finished: list[tuple[T, Any]] = []
        lost: list[T] = []
        for ref in slot.inflight:
            item = owner.pop(ref)[1]
            if ref is not failed and self.ray.wait([ref], timeout=0)[0]:
                try:
                    finished.append((item, self.ray.get(ref)))
                    continue
                except self._worker_lost:
                    pass
                except Exception:  # it raised on the worker: re-run it, and let that surface then
                    pass
            lost.append(item)
        slot.inflight = []
        slot.isolated = False
        return finished, lost

    def _lost(self, slot: _Slot, exc: BaseException) -> None:
        if slot.live:
            slot.live = False
            slot.next_ping = time.monotonic()
            self.stats.worker_failures += 1
            self.stats.live = sum(sl.live for sl in self._slots)
            log.warning("worker actor %d lost (%s); its in-flight samples are re-queued, waiting for it to restart",
                        slot.index, type(exc).__name__)

    def _ping_down_slots(self, now: float) -> None:
        for slot in self._slots:
            if not slot.live and slot.ping is None and now >= slot.next_ping:
                slot.ping = slot.actor.ready.remote()

    def _ping_answered(self, ref: Any) -> None:
        slot = next(sl for sl in self._slots if sl.ping is ref)
        slot.ping = None
        try:
            self.ray.get(ref)
        except self._worker_lost as exc:  # still restarting (or its node is gone): ask again later
            if getattr(exc, "actor_init_failed", False):  # cannot even unpickle the function: never will
                raise ClusterError(f"a worker actor cannot start on the cluster (same venv and hydra-vr on every "
                                   f"node?): {str(exc).strip()[:1000]}") from None
            self._last_error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
            slot.next_ping = time.monotonic() + _PING_RETRY_S
            return
        slot.live = True


__all__ = ["PoolStats", "RayPool", "WorkerCallError"]
