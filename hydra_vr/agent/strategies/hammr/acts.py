"""HAMMR's ReAct lines: parse ``Thought / Act / Finish`` replies and check an Act against an allowlist.

An Act is one Python statement, ``name = tool(args)`` or a bare call, checked with :mod:`ast` before
anything runs: every called name must be one of the agent's tools (vision methods and helper
functions, which run in the sandbox, or parent-side tools: LLM tools and other agents), every
variable read must exist. A refused Act becomes an error observation; the agent goes on.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

# Plain Python the agents may use around their tools (no tool: nothing to allowlist per agent).
BUILTINS = frozenset({"len", "str", "int", "float", "round", "min", "max", "sorted", "abs", "sum", "bool", "list", "range"})
STRING_METHODS = frozenset({"lower", "upper", "strip", "split", "join", "replace", "title"})
CONSTANT_NAMES = frozenset({"True", "False", "None"})
BARE_TARGET = "result"  # where a bare expression's value goes, so the observation can name it


class ActError(ValueError):
    """An Act the agent may not run: malformed, an unknown tool, an undefined variable."""


@dataclass
class Reply:
    """One parsed LLM turn: a thought and either an Act line or a Finish answer (or why neither)."""

    thought: str = ""
    act: str | None = None
    finish: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Allowlist:
    """What one agent may call: ImagePatch methods, helper functions, and parent-side tools."""

    methods: frozenset[str]
    functions: frozenset[str]
    parent_tools: frozenset[str]  # LLM tools and agents: run in the parent, one per Act, at the top

    def names(self) -> list[str]:
        return sorted(self.parent_tools | self.functions) + sorted(f".{m}()" for m in self.methods)


@dataclass
class Act:
    """A checked Act: the code to run in the sandbox, or a parent-side tool call."""

    line: str
    code: str  # what runs in the sandbox (a bare expression is bound to BARE_TARGET)
    targets: list[str]
    tool: str | None = None  # a parent-side tool (LLM tool or agent) when the Act calls one
    args: list[ast.expr] = field(default_factory=list)


_LINE = re.compile(r"^\s*(thought|act|action|finish|final answer|answer)\s*:\s*(.*)$", re.I)


def parse_reply(text: str) -> Reply:
    """``Thought: ...`` then ``Act: <code>`` or ``Finish: <answer>``; the first Act/Finish wins."""
    reply = Reply()
    for raw in text.splitlines():
        m = _LINE.match(raw)
        if not m:
            if reply.thought and reply.act is None and reply.finish is None and raw.strip():
                reply.thought += " " + raw.strip()  # a thought wrapped over lines
            continue
        key, value = m.group(1).lower(), m.group(2).strip()
        if key == "thought":
            if reply.act is None and reply.finish is None:
                reply.thought = value
            continue
        if key in ("act", "action"):
            reply.act = value.strip("`").strip()
        else:
            reply.finish = value.strip()
        break
    if reply.act is None and reply.finish is None:
        reply.error = ("malformed reply: write one 'Thought: ...' line, then 'Act: <one line of code>' "
                       "or 'Finish: <answer>'")
    elif reply.act is not None and not reply.act:
        reply.act, reply.error = None, "malformed reply: the Act line is empty"
    return reply


def _bound_locally(tree: ast.AST) -> set[str]:
    """Names a lambda or a comprehension binds inside the statement (p in ``lambda p: ...``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda):
            names |= {a.arg for a in node.args.args + node.args.kwonlyargs}
        elif isinstance(node, ast.comprehension):
            names |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    return names


def _targets(stmt: ast.Assign) -> list[str]:
    if len(stmt.targets) != 1:
        raise ActError("malformed Act: assign one result at a time (name = tool(...))")
    target = stmt.targets[0]
    elts = target.elts if isinstance(target, ast.Tuple) else [target]
    if not all(isinstance(e, ast.Name) for e in elts):
        raise ActError("malformed Act: assign the result to a plain variable name (name = tool(...))")
    return [e.id for e in elts]  # type: ignore[attr-defined]


def check_act(line: str, allow: Allowlist, defined: set[str], agent: str, forbidden: Mapping[str, str] | None = None) -> Act:
    """The Act ``line`` checked against ``allow`` and the ``defined`` variables, or :class:`ActError`.

    ``forbidden`` maps names to the reason they may not be called here (an agent calling itself or
    an ancestor), checked before the allowlist so the refusal says why.
    """
    line = line.strip().strip("`").strip()
    try:
        tree = ast.parse(line, mode="exec")
    except SyntaxError as exc:
        raise ActError(f"malformed Act (syntax error: {exc.msg}); write one Python statement, "
                       'for example people = image_patch.find("person")') from None
    if len(tree.body) != 1:
        raise ActError("malformed Act: write exactly one statement per Act")
    stmt = tree.body[0]
    if isinstance(stmt, ast.Assign):
        targets, value = _targets(stmt), stmt.value
    elif isinstance(stmt, ast.Expr):
        targets, value = [], stmt.value
    else:
        raise ActError(f"malformed Act: a {type(stmt).__name__} statement is not allowed; "
                       "write name = tool(...) or a single tool call")
    local = _bound_locally(stmt)
    top_tool = value.func.id if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) else None
    called: set[int] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise ActError(f"attribute {node.attr!r} is private; use this agent's tools")
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name):
            called.add(id(func))
            name = func.id
            if forbidden and name in forbidden:
                raise ActError(forbidden[name])
            if name in allow.parent_tools:
                if node is not value:
                    raise ActError(f"call {name} on its own line: x = {name}(...)")
                continue
            if name not in allow.functions and name not in BUILTINS:
                raise ActError(f"unknown tool {name!r}: {agent} can call " + ", ".join(allow.names()))
        elif isinstance(func, ast.Attribute):
            if func.attr not in allow.methods and func.attr not in STRING_METHODS:
                raise ActError(f"unknown tool .{func.attr}(): {agent} can call " + ", ".join(allow.names()))
        else:
            raise ActError("malformed Act: call a tool by its name")
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in called:
            if node.id not in defined and node.id not in local and node.id not in CONSTANT_NAMES:
                known = ", ".join(sorted(defined)) or "none"
                raise ActError(f"undefined variable {node.id!r}; defined variables: {known}")
    if top_tool in allow.parent_tools:
        assert isinstance(value, ast.Call)
        if value.keywords:
            raise ActError(f"malformed Act: give {top_tool} positional arguments only")
        return Act(line, "", targets or [BARE_TARGET], tool=top_tool, args=list(value.args))
    code = line if targets else f"{BARE_TARGET} = {ast.unparse(value)}"
    return Act(line, code, targets or [BARE_TARGET])


__all__ = ["Act", "ActError", "Allowlist", "BARE_TARGET", "BUILTINS", "Reply", "check_act", "parse_reply"]
