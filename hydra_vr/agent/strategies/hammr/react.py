"""One HAMMR episode: the dispatcher routes, ReAct agents think, act and observe, agents call agents.

Vision Acts run in the episode's sandbox through the shared step (``run_step``: the Act line is the
program, written once); LLM tools and agent calls run here, and their results are assigned into
the sandbox namespace so later vision Acts can use them. Every turn is one :class:`StepTrace`.
"""

from __future__ import annotations

import ast
import json
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from hydra_vr.agent.roles import fallback_program
from hydra_vr.agent.checks import check_answer
from hydra_vr.agent.step import boxes_of, result_dict, run_step
from hydra_vr.agent.strategies.common import typed_fallback
from hydra_vr.agent.strategies.hammr.acts import Act, ActError, check_act, parse_reply
from hydra_vr.agent.strategies.hammr.agents import (
    DISPATCHER, GENERIC, SPECIALISTS, AgentSpec, agent_table, dispatch_messages, example_turns, question_prompt, system_prompt,
)
from hydra_vr.agent.strategies.hammr.tools import boxes_text, call_llm_tool, describe_text, describe_variable
from hydra_vr.agent.strategy import Episode
from hydra_vr.agent.types import EpisodeResult, StepTrace
from hydra_vr.llm.base import ChatMessage
from hydra_vr.llm.typed import parse_json_reply
from hydra_vr.llm.wrapper import usage_since, usage_snapshot
from hydra_vr.memory.textualizer import textualize_call
from hydra_vr.question.frame import QuestionFrame, parse

if TYPE_CHECKING:
    from hydra_vr.agent.loop import HydraAgent

SETUP = "image_patch = ImagePatch(image)"
STOP = ["\nObserve", "Observe:"]
_TEXT_TYPES = ("str", "int", "float", "bool")


@dataclass
class AgentAnswer:
    """What an agent returns to its caller: a typed answer, or a patch (grounding), and how it got it."""

    answer: str | None
    source: str
    variable: str | None = None  # the sandbox variable holding it (a patch, for a box)
    boxes: list[list[float]] = field(default_factory=list)


@dataclass
class _Findings:
    """What one agent's Acts produced: text values (fallback guesses) and patch variables."""

    guesses: list[str] = field(default_factory=list)
    patches: list[str] = field(default_factory=list)


class HammrRun:
    """One episode: the agents, the variables the sandbox namespace holds, the trace."""

    def __init__(self, ctx: HydraAgent, episode: Episode, options: Any, prefixes: dict[str, list[ChatMessage]]) -> None:
        self.ctx, self.episode, self.options = ctx, episode, options
        self.agents = agent_table(options.flat)
        self.known: dict[str, dict[str, Any]] = {}  # the namespace's variables, as the sandbox reported them
        self.calls: list[Any] = []  # every vision call so far: a Finish of 0 or "no" resting on a blind find() is refused
        self.prefixes = prefixes  # each agent's stable prompt prefix (system + few-shot turns), kept across episodes

    # ------------------------------------------------------------------ episode
    def solve(self) -> None:
        ep = self.episode
        self._learn(self.ctx.runner.run(SETUP, ep.image_path))
        if self.options.flat:
            out = self.run_agent(GENERIC if ep.task == "vqa" else replace(GENERIC, returns="box"), ep.query, 0, ())
        elif self.options.dispatcher == "react" and ep.task == "vqa":
            out = self.run_agent(DISPATCHER, ep.query, 0, ())
        else:
            out = self.route()
        result = ep.result
        result.answer_source = out.source
        if ep.task == "grounding":
            result.boxes = out.boxes
            result.answer = f"{len(out.boxes)} box" if out.boxes else None
            if not out.boxes:
                result.error = "no box found"
        else:
            result.answer = out.answer

    def route(self) -> AgentAnswer:
        """The dispatcher as one constrained choice (small LLMs route better this way), then the specialist."""
        ep, t0, usage0 = self.episode, time.perf_counter(), usage_snapshot(self.ctx.llm)
        routes = [a for a in SPECIALISTS if a.returns == "answer"]
        if ep.task == "grounding":
            spec, thought, how = self.agents["GroundingAgent"], "The task is grounding: GroundingAgent returns the box.", "task"
        else:
            keys = [a.key for a in routes]
            if "dispatch" not in self.prefixes:
                self.prefixes["dispatch"] = dispatch_messages(routes)
            schema = {"type": "object", "properties": {"agent": {"type": "string", "enum": keys}}, "required": ["agent"]}
            reply = self.ctx.llm.chat([*self.prefixes["dispatch"], ChatMessage("user", f"Question: {ep.query}")], max_tokens=16,
                                      json_schema=schema)
            key = parse_json_reply(reply.text).get("agent")
            how = "constrained choice"
            if key not in keys:  # a backend without grammar support may reply off the list
                key, how = "spatial", f"unreadable choice {reply.text.strip()[:40]!r}; default route"
            spec = next(a for a in routes if a.key == key)
            thought = f"{spec.name} answers {spec.purpose}."
        step = self._trace(DISPATCHER.role, 0, f"answer = {spec.name}({json.dumps(ep.query)})", decision="route",
                           extra={"thought": thought, "route": spec.key, "routed_by": how})
        step.llm, t_route = usage_since(self.ctx.llm, usage0), time.perf_counter() - t0
        out = self.run_agent(spec, ep.query, 1, (DISPATCHER.name,))
        step.observation = f"{spec.name} answered {out.answer!r}" + (f" ({boxes_text(out.boxes)})" if out.boxes else "")
        step.seconds = {"route": t_route, "total": time.perf_counter() - t0}
        self._trace(DISPATCHER.role, 0, f"Finish: {out.answer}", decision="answer", observation=f"answer from {out.source}",
                    guess=out.answer)
        return out

    # ------------------------------------------------------------------- agents
    def run_agent(self, spec: AgentSpec, question: str, depth: int, stack: tuple[str, ...]) -> AgentAnswer:
        """Thought -> Act -> Observe until Finish or the step limit; then a direct answer from what was observed."""
        llm = self.ctx.llm
        frame = self._frame(spec, question)
        messages = [*self._prefix(spec), ChatMessage("user", question_prompt(question, frame.answer if frame else None))]
        found = _Findings()
        for _ in range(self.options.max_steps):
            t0, usage0 = time.perf_counter(), usage_snapshot(llm)
            reply = parse_reply(llm.chat(messages, max_tokens=self.options.max_tokens, stop=STOP).text)
            step = self._trace(spec.role, depth, "", extra={"thought": reply.thought})
            step.llm = usage_since(llm, usage0)
            nested = False
            if reply.error is not None:
                step.action, step.observation = "(malformed reply)", f"Error: {reply.error}"
                said = f"Thought: {reply.thought}" if reply.thought else "(no Thought, no Act)"
            elif reply.finish is not None:
                step.action = said = f"Finish: {reply.finish}"
                done, step.observation = self._finish(spec, reply.finish, frame)
                if done is not None:
                    step.decision, step.guess, step.boxes = "answer", done.answer, done.boxes
                    step.seconds = {"total": time.perf_counter() - t0}
                    return done
            else:
                assert reply.act is not None
                step.action = reply.act
                said = f"Act: {reply.act}"
                step.observation, nested = self._act(spec, reply.act, depth, stack, step, found)
            step.decision = "continue"
            if not nested:  # a called agent's LLM use is in its own steps
                step.llm = usage_since(llm, usage0)
            step.seconds = {"total": time.perf_counter() - t0}
            thought = f"Thought: {reply.thought}\n" if reply.thought and not said.startswith("Thought") else ""
            messages += [ChatMessage("assistant", thought + said), ChatMessage("user", f"Observe: {step.observation}")]
        return self._budget(spec, question, frame, depth, found)

    def _act(self, spec: AgentSpec, line: str, depth: int, stack: tuple[str, ...], step: StepTrace,
             found: _Findings) -> tuple[str, bool]:
        """(observation, whether another agent ran) for one Act line; a refused or failed Act is an error observation."""
        chain = " > ".join((*stack, spec.name))
        forbidden = {name: f"{spec.name} may not call {name}: an agent never calls itself or an agent that called it ({chain})"
                     for name in (*stack, spec.name)}
        try:
            act = check_act(line, spec.allowlist(), set(self.known), spec.name, forbidden)
        except ActError as exc:
            return f"Error: {exc}", False
        if act.tool is None:
            return self._vision_act(act, step, found), False
        try:
            args = [self._value(a) for a in act.args]
        except ActError as exc:
            return f"Error: {exc}", False
        if act.tool in self.agents:
            return self._call_agent(spec, act, args, depth, stack, found), True
        try:
            value = call_llm_tool(self.ctx.llm, act.tool, args)
        except ValueError as exc:
            return f"Error: {exc}", False
        error = self._assign(act.targets, repr(value))
        if error:
            return f"Error: {error}", False
        if isinstance(value, str):
            found.guesses.append(value)
        label = "Recall (the LLM's own knowledge, not a checked source)" if act.tool == "Recall" else act.tool
        lines = [describe_text(act.targets[0], value)] if len(act.targets) == 1 else \
            [describe_variable(self.known[t]) for t in act.targets if t in self.known]
        return f"{label}: " + "; ".join(lines), False

    def _vision_act(self, act: Act, step: StepTrace, found: _Findings) -> str:
        ep = self.episode
        out = run_step(self.ctx.runner, ep.image_path, lambda previous, error: act.code, task=ep.task, frame=None, max_retries=0,
                       fallback_code=None)
        step.code = act.code if act.code != act.line else ""
        step.result = result_dict(out.program)
        program = out.program
        if not program.ok:
            return f"Error: {program.error_kind} error: {program.error}"
        self._learn(program)
        self.calls.extend(program.calls)
        lines = [line for c in program.calls if c.tool == "find" and not c.result and (line := textualize_call(c))]
        for name in act.targets:
            var = self.known.get(name)
            if var is None:
                lines.append(f"'{name}' was not set")
                continue
            lines.append(describe_variable(var))
            if var.get("box") is not None or var.get("boxes"):
                found.patches.append(name)
                step.boxes = [var["box"]] if var.get("box") is not None else list(var["boxes"])
            elif var["type"] in _TEXT_TYPES:
                found.guesses.append(_literal(var["repr"]))
        return "\n".join(lines)

    def _call_agent(self, spec: AgentSpec, act: Act, args: list[str], depth: int, stack: tuple[str, ...], found: _Findings) -> str:
        callee = self.agents[act.tool or ""]  # never spec itself or an ancestor: check_act refused those
        if depth + 1 > self.options.max_depth:
            return f"Error: depth limit {self.options.max_depth} reached: {spec.name} cannot call another agent here; use your own tools"
        if len(args) != 1 or not args[0].strip():
            return f"Error: {callee.name} takes one question (a string)"
        out = self.run_agent(callee, args[0], depth + 1, (*stack, spec.name))
        if out.answer is None and not out.boxes:
            return f"Error: {callee.name} found no answer; try your own tools"
        target = act.targets[0]
        error = self._assign([target], out.variable if callee.returns == "box" and out.variable else repr(out.answer))
        if error:
            return f"Error: {error}"
        if callee.returns == "box":
            found.patches.append(target)
        elif out.answer is not None:
            found.guesses.append(out.answer)
        return f"{callee.name} answered {out.answer!r}; " + describe_variable(self.known[target])

    def _finish(self, spec: AgentSpec, text: str, frame: QuestionFrame | None) -> tuple[AgentAnswer | None, str]:
        """The agent's answer if it fits (a patch for grounding, the expected type otherwise), else why not."""
        value = text.strip().strip("`\"' ")
        var = self.known.get(value) if value.isidentifier() else None
        patch_boxes = ([var["box"]] if var.get("box") is not None else list(var.get("boxes") or [])[:1]) if var else []
        if spec.returns == "box":
            if patch_boxes:
                holder = value if var and var.get("box") is not None else f"{value}[0]"  # a list of patches: its first
                return AgentAnswer(f"{value} at {boxes_text(patch_boxes)}", spec.role, holder, patch_boxes), f"box {boxes_text(patch_boxes)}"
            return None, "Refused: Finish with the variable that holds the object's patch (for example Finish: man)"
        assert frame is not None
        answer_spec = frame.answer
        if patch_boxes:
            return None, f"Refused: '{value}' holds a patch, not an answer: ask about it (simple_query) and Finish with words"
        if var is not None:
            value = self._value(ast.Name(id=value, ctx=ast.Load()))
        typed = answer_spec.coerce(value)
        reason = check_answer(frame, typed, self.calls) if typed is not None else \
            answer_spec.check(value) or f"{value!r} does not answer the question"
        if typed is None or reason:
            return None, f"Refused: {reason} Keep going: use a tool, or Finish with {answer_spec.describe()}"
        return AgentAnswer(typed, spec.role, var["name"] if var else None), f"answer: {typed}"

    def _budget(self, spec: AgentSpec, question: str, frame: QuestionFrame | None, depth: int, found: _Findings) -> AgentAnswer:
        """Step limit without a Finish: a direct answer from what was observed, marked as such."""
        t0 = time.perf_counter()
        step = self._trace(spec.role, depth, "(budget exhausted) answer from what was observed", decision="budget",
                           extra={"thought": f"{self.options.max_steps} steps without an accepted Finish"})
        if spec.returns == "box":
            for name in reversed(found.patches):
                var = self.known.get(name) or {}
                boxes = [var["box"]] if var.get("box") is not None else list(var.get("boxes") or [])[:1]
                if boxes:
                    step.observation, step.boxes = f"the last patch found, '{name}' at {boxes_text(boxes)}", boxes
                    return AgentAnswer(f"{name} at {boxes_text(boxes)}", "budget exhausted: last patch", name, boxes)
            code = fallback_program(question, "grounding", last_resort=True)
            program = self.ctx.runner.run(code, self.episode.image_path)
            boxes = boxes_of(program.final_answer) if program.ok and program.has_final_answer else []
            step.code, step.result, step.boxes = code, result_dict(program), boxes
            step.observation = f"fallback find: {boxes_text(boxes)}" if boxes else "fallback find: no box"
            step.seconds = {"total": time.perf_counter() - t0}
            return AgentAnswer(f"{len(boxes)} box" if boxes else None, "budget exhausted: fallback find", None, boxes)
        assert frame is not None
        ep = self.episode
        sub = Episode(ep.image_path, question, "vqa", frame,
                      EpisodeResult(query=question, task="vqa", image=ep.image_path, mode=ep.result.mode, answer=None, boxes=[],
                                    steps=ep.result.steps))  # shared steps: a whole-image fallback lands in this trace
        typed_fallback(self.ctx, sub, found.guesses, role=spec.role, depth=depth)
        source = f"budget exhausted: {sub.result.answer_source or 'no answer'}"
        step.observation, step.guess = f"answer {sub.result.answer!r} ({source})", sub.result.answer
        step.seconds = {"total": time.perf_counter() - t0}
        return AgentAnswer(sub.result.answer, source)

    # ------------------------------------------------------------------ helpers
    def _prefix(self, spec: AgentSpec) -> list[ChatMessage]:
        key = f"{spec.name}:{spec.returns}"
        if key not in self.prefixes:
            self.prefixes[key] = [ChatMessage("system", system_prompt(spec, self.agents)), *example_turns(spec)]
        return self.prefixes[key]

    def _frame(self, spec: AgentSpec, question: str) -> QuestionFrame | None:
        """The frame of the question an agent answers: the episode's own (parsed once, with the dataset's
        choices) when it is the episode's question, else the sub-question's, parsed here once."""
        if spec.returns == "box":
            return None
        ep = self.episode
        if ep.frame is not None and question.strip() in ("", ep.query.strip()):
            return ep.frame
        return parse(question if question.strip() else ep.query)

    def _learn(self, program: Any) -> None:
        for v in program.variables:
            self.known[v.name] = v.to_dict()
        for name in program.deleted:
            self.known.pop(name, None)

    def _assign(self, targets: list[str], expression: str) -> str | None:
        """Bind a parent-side result in the sandbox namespace (``a = 'text'`` or ``a = patch``); the error if any."""
        program = self.ctx.runner.run(f"{', '.join(targets)} = {expression}", self.episode.image_path)
        if not program.ok:
            return f"{program.error_kind} error: {program.error}"
        self._learn(program)
        for t in targets:  # an unchanged value is not reported again, but is still there
            self.known.setdefault(t, {"name": t, "type": "str", "repr": expression})
        return None

    def _value(self, node: ast.expr) -> str:
        """An argument of a parent-side tool as text: a literal as is, anything else evaluated in the sandbox."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        source = ast.unparse(node)
        program = self.ctx.runner.run(f"print({source})", self.episode.image_path)
        if not program.ok:
            raise ActError(f"could not evaluate {source}: {program.error_kind} error: {program.error}")
        return program.stdout.rstrip("\n")

    def _trace(self, role: str, depth: int, action: str, **fields: Any) -> StepTrace:
        steps = self.episode.result.steps
        step = StepTrace(step=len(steps) + 1, action=action, role=role, depth=depth, **fields)
        steps.append(step)
        return step


def _literal(text: str) -> str:
    """A reported repr as plain text ('red' -> red)."""
    try:
        return str(ast.literal_eval(text))
    except (ValueError, SyntaxError):
        return text


__all__ = ["AgentAnswer", "HammrRun"]
