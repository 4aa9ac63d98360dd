"""HierVA: a manager with scoped workers (see :mod:`hydra_vr.agent.strategies.hierva.strategy`)."""

from hydra_vr.agent.strategies.hierva.strategy import HierVAOptions, HierVAStrategy
from hydra_vr.agent.strategies.hierva.task import TaskError, WorkerTask

__all__ = ["HierVAOptions", "HierVAStrategy", "TaskError", "WorkerTask"]
