"""Scale-out: run per-sample work (eval, record) on Ray actors, driven from one process.

Ray is an optional extra (``pip install hydra-vr[ray]``) and is imported only when a
command is given ``--ray``; importing this package imports nothing from Ray.
"""

from hydra_vr.scale.settings import ClusterError, RaySettings

__all__ = ["ClusterError", "RaySettings"]
