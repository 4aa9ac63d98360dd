"""The agent strategies registered in :mod:`hydra_vr.agent.strategy` (imported lazily by name)."""
