"""State memory bank and textualizer."""

from hydra_vr.memory.bank import MemoryEntry, StateMemoryBank
from hydra_vr.memory.textualizer import TEMPLATES, textualize_call, textualize_step, textualize_variable

__all__ = ["TEMPLATES", "MemoryEntry", "StateMemoryBank", "textualize_call", "textualize_step", "textualize_variable"]
