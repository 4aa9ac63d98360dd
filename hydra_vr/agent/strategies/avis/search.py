"""AVIS (Hu et al., NeurIPS 2023): a planner and a reasoner search the transition graph depth first.

At each decision the planner sees the feasible actions (the graph's edges from the current state
minus the actions already taken there) and examples retrieved for them; the action runs; the
reasoner labels the output. ``informative`` moves to the action's state (a new node of the search
tree), ``uninformative`` keeps the state with the action excluded and restores the sandbox namespace
when the action had moved the focus (backtracking), ``answer`` ends the search when the answer fits
the question's type. A node with no feasible action left returns to its parent. When the budget
(``max_calls`` actions) is spent, the answer comes from the working memory, marked as such.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field, model_validator

from hydra_vr.agent.checks import check_answer, refused
from hydra_vr.agent.step import EpisodeState
from hydra_vr.agent.strategies.avis.actions import (
    BOX_ACTIONS, RECALL_SOURCE, ActionOutcome, Focus, propose_nouns, run_action,
)
from hydra_vr.agent.strategies.avis.graph import GraphError, TransitionGraph, load_graph
from hydra_vr.agent.strategies.avis.pool import ExamplePool
from hydra_vr.agent.strategies.avis.roles import AvisPlanner, AvisReasoner, Judgement, PlanChoice
from hydra_vr.agent.strategies.common import fallback_box, typed_fallback
from hydra_vr.agent.strategy import Episode, StrategyConfigError, StrategyOptions
from hydra_vr.agent.types import StepTrace
from hydra_vr.answer_types import clean
from hydra_vr.llm.base import ChatMessage
from hydra_vr.llm.typed import ask_typed
from hydra_vr.llm.wrapper import usage_since, usage_snapshot
from hydra_vr.memory import MemoryEntry, StateMemoryBank
from hydra_vr.prompts import render_prompt

if TYPE_CHECKING:
    from hydra_vr.agent.loop import HydraAgent

DEFAULT_ORDER = ["caption", "find", "classify_box", "fine_vqa_box", "vqa_box", "recall", "llm_qa", "ground"]
MEMORY_SOURCE = "working memory (budget exhausted)"


class AvisOptions(StrategyOptions):
    graph: str | None = Field(None, description="a transition-graph YAML file (default: the packaged avis_graph.yaml)")
    pool: str | None = Field(None, description="an example-pool YAML file (default: the packaged avis_pool.yaml)")
    max_calls: int = Field(8, ge=1, le=64, description="actions per episode before answering from working memory")
    examples: int = Field(3, ge=0, le=12, description="in-context examples retrieved per planner decision")
    planner_retries: int = Field(2, ge=0, le=5, description="re-asks of an invalid planner reply")
    no_graph: bool = Field(False, description="ablation: every action is always allowed")
    no_backtrack: bool = Field(False, description="ablation: an uninformative output moves on like an informative one")
    fixed_order: bool = Field(False, description="ablation: the actions of `order`, one after another, instead of the planner")
    order: list[str] = Field(default_factory=lambda: list(DEFAULT_ORDER))

    @model_validator(mode="after")
    def _order_not_empty(self) -> AvisOptions:
        if self.fixed_order and not self.order:
            raise ValueError("fixed_order needs a non-empty `order`")
        return self


@dataclass
class Node:
    """A node of the search tree: a state, and the actions already taken from it."""

    state: str
    taken: set[str] = field(default_factory=set)


class AvisStrategy:
    name: ClassVar[str] = "avis"
    summary: ClassVar[str] = ("AVIS: a planner picks actions the transition graph allows, a reasoner labels each output "
                              "(informative / uninformative -> backtrack / answer), working memory; YAML graph and example pool")
    Options: ClassVar[type[StrategyOptions]] = AvisOptions

    def __init__(self, options: AvisOptions | None = None) -> None:
        self.options = options or AvisOptions()
        try:
            self.graph: TransitionGraph = load_graph(self.options.graph)
            self.pool = ExamplePool.load(self.graph, self.options.pool)
        except GraphError as exc:
            raise StrategyConfigError(f"agent.avis: {exc}") from None
        unknown = [a for a in self.options.order if a not in self.graph.actions]
        if unknown:
            raise StrategyConfigError(f"agent.avis.order names unknown actions {unknown}; defined: {', '.join(self.graph.actions)}")

    def run(self, ctx: HydraAgent, episode: Episode) -> None:
        Search(self, ctx, episode).run()


class Search:
    """One episode of AVIS's search."""

    def __init__(self, strategy: AvisStrategy, ctx: HydraAgent, episode: Episode) -> None:
        self.opts = strategy.options
        self.graph = strategy.graph
        self.pool = strategy.pool
        self.ctx = ctx
        self.episode = episode
        self.planner = AvisPlanner(ctx.llm, self.graph, self.opts.planner_retries)
        self.reasoner = AvisReasoner(ctx.llm, self.pool.reasoner)
        self.memory = StateMemoryBank(episode.query, max_chars=1500)
        self.nodes = [Node(self.graph.start)]
        self.focus: Focus | None = None
        self.programs: list[str] = []  # the programs whose variables later actions read (finds that focused a box)
        self.done: set[tuple[str, str, str]] = set()  # (action, query, focus) already executed
        self.guesses: list[str] = []
        self.facts: list[str] = []
        self.calls: list = []  # every vision call of the episode: the evidence the answer checks read
        self.order = [a for a in self.opts.order if episode.task in self.graph.actions[a].tasks]

    # ------------------------------------------------------------ feasibility
    def _key(self, action: str, query: str) -> tuple[str, str, str]:
        on = str(self.focus.box) if self.focus is not None and action in BOX_ACTIONS else ""
        return action, clean(query), on

    def feasible(self, node: Node) -> list[str]:
        if self.opts.fixed_order:
            return [a for a in self.order if not any(k[0] == a for k in self.done)][:1]
        actions = self.graph.feasible(node.state, self.episode.task, node.taken, use_graph=not self.opts.no_graph)
        # An action without a query gives the same output again on the same focus: not feasible twice.
        return [a for a in actions if self.graph.actions[a].query != "none" or self._key(a, "") not in self.done]

    def check(self, action: str, query: str) -> str | None:
        if self._key(action, query) in self.done:
            return f"{action}({query!r}) was already done; its result is in the working memory. Choose another action or query"
        return None

    def default_query(self, action: str) -> str:
        kind = self.graph.actions[action].query
        if kind == "noun":
            return (propose_nouns(self.episode.query) or ["object"])[0]
        return "" if kind == "none" else self.episode.query

    # ------------------------------------------------------------------- loop
    def run(self) -> None:
        budget, stop = self.opts.max_calls, "the budget of actions"
        calls, dead_end = 0, ""
        while calls < budget:
            node = self.nodes[-1]
            feasible = self.feasible(node)
            if not feasible:
                if len(self.nodes) > 1 and not self.opts.fixed_order:
                    dead_end = f"no feasible action left in state {node.state}: back to {self.nodes[-2].state}"
                    self.nodes.pop()
                    continue
                stop = "no feasible action left"
                break
            calls += 1
            if self.decide(calls, node, feasible, dead_end):
                return
            dead_end = ""
        self.answer_from_memory(stop)

    def decide(self, step: int, node: Node, feasible: list[str], dead_end: str) -> bool:
        """One decision: plan, act, judge, move. True when the episode is answered."""
        ctx, episode = self.ctx, self.episode
        t0, usage0 = time.perf_counter(), usage_snapshot(ctx.llm)
        examples = []
        if self.opts.fixed_order:
            choice = PlanChoice(feasible[0], self.default_query(feasible[0]))
        else:
            examples = self.pool.retrieve(episode.query, episode.task, node.state, feasible, self.opts.examples)
            msgs = self.planner.messages(episode.query, episode.spec, node.state, self.memory_text(),
                                         propose_nouns(episode.query), feasible, examples)
            choice = self.planner.choose(msgs, feasible, self.check, self.default_query)
        t_plan = time.perf_counter()
        saved = EpisodeState.save(self.memory, self.programs), self.focus, list(self.programs)
        out = run_action(ctx, episode.image_path, episode.task, episode.frame, choice.action, choice.query, self.focus,
                         episode.query, self.memory_text(), "; ".join(self.facts[-4:]))
        self.done.add(self._key(choice.action, choice.query))
        self.calls.extend(out.calls)
        t_act = time.perf_counter()
        judgement = self.judge(choice, out)
        t_judge = time.perf_counter()
        if out.guess:
            self.guesses.append(out.guess)

        answer, refused = self.accepted(choice, out, judgement)
        backtrack = judgement.label == "uninformative" and not self.opts.no_backtrack
        node.taken.add(choice.action)
        if backtrack:
            if out.focus is not None:  # the action moved the focus: put the namespace back as it was
                state, self.focus, self.programs = saved
                state.restore(self.memory, ctx.runner, episode.image_path)
        else:
            if out.focus is not None:
                self.focus = out.focus
                self.programs.append(out.code)
            if answer is None and not (episode.task == "grounding" and out.boxes):
                self.nodes.append(Node(choice.action))
        self.remember(step, choice, out, judgement)

        decision = "answer" if answer is not None else ("backtrack" if backtrack else "continue")
        extra = {"state": node.state, "feasible": feasible, "action": choice.action, "query": choice.query,
                 "label": judgement.label + (" (by rule: empty output)" if judgement.by_rule else ""), "fact": judgement.fact,
                 "backtrack": backtrack}
        if out.source != "tool":
            extra["source"] = out.source
        if refused:
            extra["refused"] = refused
        if examples:
            extra["examples"] = ", ".join(f"{d.action} ({d.question})" for d in examples)
        if choice.errors:
            extra["planner_errors"] = choice.errors + (["fell back to the first feasible action"] if choice.fallback else [])
        if dead_end:
            extra["dead_end"] = dead_end
        episode.result.steps.append(StepTrace(
            step=step, action=f"{choice.action}({choice.query!r})" if choice.query else choice.action, role="avis",
            code=out.code, observation=out.observation, boxes=out.boxes, decision=decision, guess=out.guess,
            attempts=out.attempts, result=out.result, llm=usage_since(ctx.llm, usage0),
            seconds={"plan": t_plan - t0, "act": t_act - t_plan, "judge": t_judge - t_act, "total": time.perf_counter() - t0},
            extra=extra))
        if answer is None:
            return False
        if episode.task == "grounding":
            episode.result.boxes = out.boxes[:1]
            episode.result.answer, episode.result.answer_source = "1 box", f"{choice.action} action"
        else:
            episode.result.answer = answer
            episode.result.answer_source = "reasoner" + (" (recall: LLM knowledge)" if out.source == RECALL_SOURCE else "")
        return True

    def judge(self, choice: PlanChoice, out: ActionOutcome) -> Judgement:
        """The reasoner's label; outputs that hold nothing, and the terminal actions, are labelled by rule."""
        if out.empty:
            return Judgement("uninformative", out.observation.splitlines()[-1][:200] if out.observation else "nothing", "", 0, True)
        if choice.action == "ground":
            return Judgement("answer" if out.boxes else "uninformative", f"box {out.boxes[0]}" if out.boxes else "no box", "", 0, True)
        if choice.action == "llm_qa" and out.answer:
            return Judgement("answer", f"the short answer from the working memory is {out.answer}", out.answer, 0, True)
        return self.reasoner.judge(self.episode.query, self.episode.task, self.episode.spec, self.memory_text(), choice.action,
                                   choice.query, out.observation)

    def accepted(self, choice: PlanChoice, out: ActionOutcome, judgement: Judgement) -> tuple[str | None, str]:
        """(the answer, "") when the judgement ends the episode, else (None, why an answer was refused)."""
        if judgement.label != "answer":
            return None, ""
        if self.episode.task == "grounding":
            return ("box", "") if out.boxes else (None, "no box to return")
        spec = self.episode.spec
        assert spec is not None
        answer = spec.coerce(judgement.answer)
        # Held to the question's type and to the declared answer checks on the episode's calls (a misfit, a failure
        # string, the question's own subject, a "no" no search could give) does not end the search.
        frame = self.episode.frame
        assert frame is not None
        why = (spec.check(judgement.answer) or "no answer given") if answer is None else check_answer(frame, answer, self.calls)
        if why:
            judgement.label = "informative"
            return None, why
        return answer, ""

    # ---------------------------------------------------------------- memory
    def remember(self, step: int, choice: PlanChoice, out: ActionOutcome, judgement: Judgement) -> None:
        what = choice.action + (f"({choice.query})" if choice.query else "")
        if out.source == RECALL_SOURCE:
            what += f" [{RECALL_SOURCE}]"
        fact = judgement.fact or out.observation.splitlines()[0][:200]
        self.memory.add(MemoryEntry(step, what, out.code, f"{judgement.label}: {fact}", ok=not out.empty, guess=out.guess))
        if judgement.label != "uninformative":
            self.facts.append(fact)

    def memory_text(self) -> str:
        return self.memory.render() if self.memory.entries else ""

    def answer_from_memory(self, stop: str) -> None:
        """Budget spent (or nothing feasible): a typed answer from the working memory, marked as such."""
        ctx, episode, result = self.ctx, self.episode, self.episode.result
        t0, usage0 = time.perf_counter(), usage_snapshot(ctx.llm)
        if episode.task == "grounding":
            result.boxes = [self.focus.box] if self.focus is not None else []
            result.answer_source = MEMORY_SOURCE if result.boxes else ""
            if not result.boxes:
                result.error = f"no box found before {stop}"
            result.steps.append(StepTrace(step=len(result.steps) + 1, action=f"({stop}) the focused box from working memory",
                                          role="avis", boxes=result.boxes, decision="answer" if result.boxes else "fail",
                                          seconds={"total": time.perf_counter() - t0}, extra={"stop": stop}))
            if not result.boxes:
                fallback_box(ctx, episode, role="avis")
            return
        spec = episode.spec
        assert spec is not None
        messages = [ChatMessage("system", render_prompt("avis_answer_system")),
                    ChatMessage("user", render_prompt("avis_answer_user", question=episode.query, memory=self.memory_text(),
                                                      expected=spec.describe()))]
        reply = ask_typed(ctx.llm, messages, spec, max_tokens=24)
        assert episode.frame is not None
        if reply.answer is not None and (why := check_answer(episode.frame, reply.answer, self.calls)):
            reply.reasons.append(why)
            reply.answer = None
        result.steps.append(StepTrace(
            step=len(result.steps) + 1, action=f"({stop}) answer from working memory", role="avis",
            observation=f"answer: {reply.answer or reply.raw!r}" + ("" if reply.answer else f" refused ({'; '.join(reply.reasons)})"),
            decision="answer", guess=reply.answer, llm=usage_since(ctx.llm, usage0), seconds={"total": time.perf_counter() - t0},
            extra={"stop": stop, "source": MEMORY_SOURCE}))
        if reply.answer is not None:
            result.answer, result.answer_source = reply.answer, MEMORY_SOURCE
            return
        typed_fallback(ctx, episode, [g for g in self.guesses if not refused(episode.frame, g, self.calls)], role="avis")
        result.answer_source = f"{result.answer_source} ({stop})"


__all__ = ["AvisOptions", "AvisStrategy", "DEFAULT_ORDER", "MEMORY_SOURCE", "Node", "Search"]
