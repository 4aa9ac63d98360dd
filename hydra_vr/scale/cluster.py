"""Connect the driver to a Ray cluster (or start a local one) and disconnect cleanly.

The address is checked with a plain TCP connect first: ``ray.init`` on an address where nothing
listens retries for a minute or more before failing, and its error does not name the cause.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from hydra_vr.scale.settings import ClusterError, RaySettings

log = logging.getLogger(__name__)

RAY_EXTRA_HINT = "pip install 'hydra-vr[ray]' (every node needs the same venv)"


def import_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise ClusterError(f"--ray needs Ray, which is not installed: {RAY_EXTRA_HINT}") from None
    return ray


def split_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``ray://HOST:PORT`` -> (host, port); a clear error otherwise."""
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ClusterError(f"Ray address {address!r} must be auto, local, HOST:PORT or ray://HOST:PORT")
    return host.strip("[]"), int(port)


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    host, port = split_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        raise ClusterError(
            f"cannot reach the Ray cluster at {address}: {exc.strerror or exc} "
            "(is the head node started with `ray start --head`, and is the port open?)"
        ) from None


def _target(address: str) -> str:
    """The address ray.init gets; ``auto`` with RAY_ADDRESS set is checked like an explicit one."""
    if address == "local":
        return "local"
    if address == "auto":
        env = os.environ.get("RAY_ADDRESS", "").strip()
        if env and env not in ("auto", "local"):
            check_reachable(env)
        return "auto"
    check_reachable(address)
    return address


@contextmanager
def ray_session(settings: RaySettings) -> Iterator[ModuleType]:
    """``ray`` connected to ``settings.address`` for the duration of the block.

    A driver already connected (a test, a notebook) is reused and left connected.
    """
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    target = _target(settings.address)
    kwargs: dict[str, object] = {"log_to_driver": False, "logging_level": logging.WARNING}
    if target == "local":  # these only apply to a cluster this driver starts
        kwargs.update(include_dashboard=False, object_store_memory=settings.object_store_mb * 1024 * 1024)
    try:
        ray.init(address=target, **kwargs)
    except ConnectionError as exc:
        hint = "set RAY_ADDRESS or pass --ray HOST:PORT" if target == "auto" else "check the address"
        raise ClusterError(f"cannot join the Ray cluster ({settings.address}): {exc}; {hint}") from None
    except Exception as exc:  # auth mismatch, version mismatch: Ray's own message says which
        raise ClusterError(
            f"cannot join the Ray cluster ({settings.address}): {type(exc).__name__}: {exc} "
            "(RAY_AUTH_MODE and the token must match the cluster's, and Ray's version too)"
        ) from None
    try:
        yield ray
    finally:
        ray.shutdown()  # a local cluster started here goes with it; a joined one stays up


__all__ = ["RAY_EXTRA_HINT", "check_reachable", "import_ray", "ray_session", "split_address"]
