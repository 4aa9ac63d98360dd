"""AVIS: graph-constrained planner/reasoner search with backtracking (``--strategy avis``)."""

from hydra_vr.agent.strategies.avis.search import AvisOptions, AvisStrategy

__all__ = ["AvisOptions", "AvisStrategy"]
