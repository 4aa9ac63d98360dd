"""What a Ray run needs to know: where the cluster is, how many actors, what each one reserves."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

SPECIAL_ADDRESSES = ("auto", "local")


class ClusterError(RuntimeError):
    """Ray is missing, the cluster cannot be reached, or the run cannot go on there; the message says why."""


@dataclass(frozen=True)
class RaySettings:
    """How to spread work over a Ray cluster.

    ``address``: ``auto`` joins the cluster in ``RAY_ADDRESS`` (or the one running on this
    machine), ``local`` starts a throw-away one here, anything else is ``HOST:PORT`` of a head
    node (``ray://HOST:PORT`` for Ray Client). One actor per worker slot; each reserves
    ``num_cpus`` / ``num_gpus`` / ``memory_mb`` / custom ``resources`` so Ray places it where the
    models fit. ``inflight_per_actor`` samples are queued on each actor (2 hides the round trip;
    a dead actor loses that many, which are re-queued). A sample whose worker died ``max_tries``
    times is recorded as an error. ``stall_timeout_s``: give up when no actor has been alive for
    that long (the cluster has no room left for any of them).
    """

    address: str
    workers: int = 1
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    memory_mb: int | None = None
    resources: dict[str, float] = field(default_factory=dict)
    max_tries: int = 3
    inflight_per_actor: int = 2
    object_store_mb: int = 256  # only for address=local; Ray would otherwise claim 30% of RAM
    stall_timeout_s: float = 300.0

    def __post_init__(self) -> None:
        problems = []
        if not self.address.strip():
            problems.append("address is empty (use auto, local or HOST:PORT)")
        if self.workers < 1:
            problems.append(f"workers must be >= 1, got {self.workers}")
        if self.num_cpus < 0 or self.num_gpus < 0 or any(v < 0 or math.isnan(v) for v in self.resources.values()):
            problems.append("resources per actor must be >= 0")
        if self.memory_mb is not None and self.memory_mb <= 0:
            problems.append(f"memory_mb must be > 0, got {self.memory_mb}")
        if self.max_tries < 1:
            problems.append(f"max_tries must be >= 1, got {self.max_tries}")
        if self.inflight_per_actor < 1:
            problems.append(f"inflight_per_actor must be >= 1, got {self.inflight_per_actor}")
        if self.object_store_mb < 80:  # Ray refuses less than about 75 MB
            problems.append(f"object_store_mb must be >= 80, got {self.object_store_mb}")
        if self.stall_timeout_s <= 0:
            problems.append(f"stall_timeout_s must be > 0, got {self.stall_timeout_s}")
        if problems:
            raise ValueError("; ".join(problems))

    def actor_options(self) -> dict[str, object]:
        """``ray.remote(...).options(**...)`` for one worker actor."""
        options: dict[str, object] = {"num_cpus": self.num_cpus, "num_gpus": self.num_gpus}
        if self.memory_mb is not None:
            options["memory"] = self.memory_mb * 1024 * 1024
        if self.resources:
            options["resources"] = dict(self.resources)
        return options

    def threads(self) -> int:
        """Threads one actor's maths libraries and llama.cpp should use: what it reserved."""
        return max(1, int(self.num_cpus))
