"""HAMMR (Castrejon et al., 2024): a dispatcher routes each question to a specialist ReAct agent.

Agents think (``Thought``), act (one allowlisted line of code, ``Act``) and observe; any agent can be
a tool of another (depth-limited, never itself or an ancestor). ``agent.hammr.flat: true`` runs the
paper's baseline instead: one ReAct agent with every tool. See STRATEGIES.md section 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from hydra_vr.agent.strategies.hammr.react import AgentAnswer, HammrRun
from hydra_vr.agent.strategy import Episode, StrategyOptions
from hydra_vr.llm.base import ChatMessage

if TYPE_CHECKING:
    from hydra_vr.agent.loop import HydraAgent


class HammrOptions(StrategyOptions):
    flat: bool = False  # the paper's baseline: one ReAct agent with every tool, no dispatcher
    max_steps: int = Field(6, ge=1, le=30)  # Thought/Act turns per agent
    max_depth: int = Field(3, ge=1, le=8)  # agents calling agents (the dispatcher is depth 0)
    # choice: the dispatcher is one constrained choice (small LLMs); react: a ReAct agent with the specialists as tools
    dispatcher: Literal["choice", "react"] = "choice"
    max_tokens: int = Field(160, ge=32, le=2048)  # per Thought/Act reply


class HammrStrategy:
    name: ClassVar[str] = "hammr"
    summary: ClassVar[str] = ("HAMMR: a dispatcher routes the question to a specialist ReAct agent (spatial, counting, text, "
                              "knowledge, grounding) that thinks, acts with allowlisted tools and observes; flat: one agent")
    Options: ClassVar[type[StrategyOptions]] = HammrOptions

    def __init__(self, options: HammrOptions | None = None) -> None:
        self.options = options or HammrOptions()
        self._prefixes: dict[str, list[ChatMessage]] = {}  # stable prompt prefixes, built once per strategy

    def run(self, ctx: HydraAgent, episode: Episode) -> None:
        HammrRun(ctx, episode, self.options, self._prefixes).solve()


__all__ = ["AgentAnswer", "HammrOptions", "HammrStrategy"]
