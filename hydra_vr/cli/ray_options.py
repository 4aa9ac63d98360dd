"""``--ray`` and the per-actor resource options shared by ``eval`` and ``record``."""

from __future__ import annotations

import typer

from hydra_vr.cli.common import fail
from hydra_vr.scale import RaySettings  # plain data: imports nothing from Ray

RAY_OPTION = typer.Option(
    None, "--ray", metavar="ADDRESS|auto|local",
    help="Run the samples on a Ray cluster (pip install 'hydra-vr[ray]'): HOST:PORT of the head node, auto "
    "(RAY_ADDRESS), or local (start one here). --workers actors, each loading the models once.")
RAY_CPUS_OPTION = typer.Option(1.0, "--ray-cpus", min=0.0, help="CPUs each Ray actor reserves (its threads).")
RAY_GPUS_OPTION = typer.Option(0.0, "--ray-gpus", min=0.0, help="GPUs each Ray actor reserves (fractions share one).")
RAY_MEMORY_OPTION = typer.Option(None, "--ray-memory-mb", min=1, help="Memory (MB) each Ray actor reserves for placement.")
RAY_RESOURCE_OPTION = typer.Option(None, "--ray-resource", help="Custom Ray resource per actor, name=amount (repeatable).")
RAY_TRIES_OPTION = typer.Option(3, "--max-tries", min=1, help="With --ray: a sample whose worker died this many times is recorded as an error.")


def ray_settings(address: str | None, workers: int, cpus: float, gpus: float, memory_mb: int | None,
                 resources: list[str] | None, max_tries: int) -> RaySettings | None:
    """The :class:`RaySettings` the options describe, or None without ``--ray``."""
    if address is None:
        return None
    custom: dict[str, float] = {}
    for item in resources or []:
        name, sep, amount = item.partition("=")
        try:
            custom[name.strip()] = float(amount)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            fail(f"--ray-resource {item!r} must look like name=amount, e.g. big_memory=1")
    try:
        return RaySettings(address=address, workers=workers, num_cpus=cpus, num_gpus=gpus, memory_mb=memory_mb,
                           resources=custom, max_tries=max_tries)
    except ValueError as exc:
        fail(f"--ray: {exc}")
        raise  # unreachable: fail() exits
