"""What a generated program may do: RestrictedPython's compiler plus our rules and runtime guards.

RestrictedPython (Zope's policy library, maintained since 2002) rewrites the AST so that every
attribute read, item access, iteration and ``print`` goes through a guard we supply, and refuses
names and attributes that start with ``_`` at compile time. We add, on top:

* compile time: an import allowlist, no class definitions, no attribute assignment or deletion
  (so ``ImagePatch.find = ...`` is refused before running), no rebinding of API names, and a list
  of builtins that are refused by name (``open``, ``exec``, ``globals`` ...);
* run time: ``getattr`` that refuses private/dunder and introspection attributes, ``str.format``
  (its field syntax reads attributes), modules outside the allowlist, frames/code/tracebacks, and
  anything but a small allowlist on PIL images and ImagePatch objects (``image.save`` writes
  files, ``image.show`` starts a viewer); writes only into dicts and lists.

Runtime refusals are recorded even when the program catches the :class:`PolicyError`, so a program
cannot probe the policy quietly: its step is reported as a ``policy`` error.
"""

from __future__ import annotations

import ast
import builtins
import operator
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import CodeType, FrameType, ModuleType, TracebackType
from typing import Any, NoReturn

from RestrictedPython import compile_restricted_exec
from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence
from RestrictedPython.transformer import (
    INSPECT_ATTRIBUTES,
    IOPERATOR_TO_STR,
    RestrictingNodeTransformer,
    copy_locations,
)

PROGRAM_FILENAME = "<program>"
MAX_SOURCE_CHARS = 100_000

# Pure-computation modules; each was checked for module attributes that lead to ``sys``/``os``
# (those are refused at run time anyway because their values are modules not listed here).
DEFAULT_ALLOWED_MODULES: frozenset[str] = frozenset({"math", "re", "statistics", "itertools", "collections"})

# Builtins refused by name at compile time (the rest of what is not provided is a NameError).
FORBIDDEN_NAMES: frozenset[str] = frozenset({
    "open", "exec", "eval", "compile", "globals", "locals", "vars", "dir", "input", "breakpoint",
    "help", "exit", "quit", "memoryview", "type", "object", "super", "setattr", "delattr",
    "classmethod", "staticmethod", "property", "aiter", "anext", "copyright", "credits", "license",
})

_SAFE_BUILTIN_NAMES = (
    "abs", "all", "any", "ascii", "bin", "bool", "callable", "chr", "complex", "dict", "divmod",
    "enumerate", "filter", "float", "format", "frozenset", "hash", "hex", "id", "int", "isinstance",
    "issubclass", "iter", "len", "list", "map", "max", "min", "next", "oct", "ord", "pow", "range",
    "repr", "reversed", "round", "set", "slice", "sorted", "str", "sum", "tuple", "zip",
)
_SAFE_EXCEPTIONS = (
    "ArithmeticError", "AssertionError", "AttributeError", "BaseException", "Exception", "IndexError",
    "KeyError", "LookupError", "MemoryError", "NameError", "NotImplementedError", "OverflowError",
    "RecursionError", "RuntimeError", "StopIteration", "TypeError", "ValueError", "ZeroDivisionError",
    "ImportError", "UnboundLocalError",
)

_INPLACE_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
    "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow, "<<=": operator.ilshift,
    ">>=": operator.irshift, "&=": operator.iand, "^=": operator.ixor, "|=": operator.ior,
    "@=": operator.imatmul,
}


class PolicyError(Exception):
    """The program tried something the sandbox policy forbids; ``rule`` says what."""

    def __init__(self, rule: str) -> None:
        super().__init__(rule)
        self.rule = rule


@dataclass
class CompileOutcome:
    code: CodeType | None
    error_kind: str | None = None  # "syntax" or "policy"
    error: str | None = None
    line: int | None = None
    rule: str | None = None  # for policy errors: the rule broken, without the line


class SandboxTransformer(RestrictingNodeTransformer):
    """RestrictedPython's transformer with the extra compile-time rules of this sandbox."""

    allowed_modules: frozenset[str] = DEFAULT_ALLOWED_MODULES
    reserved_names: frozenset[str] = frozenset()

    def check_name(self, node: Any, name: str | None, allow_magic_methods: bool = False) -> None:
        # Never allow dunder function names: there are no classes, so they would only confuse.
        super().check_name(node, name, allow_magic_methods=False)
        binding = not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load))
        if binding and name in self.reserved_names:
            self.error(node, f'"{name}" is part of the API and cannot be rebound or deleted.')

    def visit_Name(self, node: ast.Name) -> Any:
        if isinstance(node.ctx, ast.Load) and node.id in FORBIDDEN_NAMES:
            self.error(node, f'"{node.id}" is not allowed in programs.')
        return super().visit_Name(node)

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.error(node, f'assigning or deleting attributes ("{node.attr}") is not allowed; use a variable.')
        return super().visit_Attribute(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        """Also allow ``counts[k] += 1`` (RestrictedPython refuses it): the container and key are
        evaluated once into temporaries, then read with _getitem_ and written with _write_."""
        if not isinstance(node.target, ast.Subscript):
            return super().visit_AugAssign(node)
        container = self.visit(node.target.value)
        key = node.target.slice
        if isinstance(key, ast.Slice):  # a[i:j] += x: the key is a slice object
            key = ast.Call(ast.Name("slice", ast.Load()),
                           [k or ast.Constant(None) for k in (key.lower, key.upper, key.step)], [])
        key = self.visit(key)
        value = self.visit(node.value)
        tmp_obj, tmp_key = self.gen_tmp_name(), self.gen_tmp_name()

        def load(name: str) -> ast.Name:
            return ast.Name(name, ast.Load())

        current = ast.Call(load("_getitem_"), [load(tmp_obj), load(tmp_key)], [])
        updated = ast.Call(load("_inplacevar_"), [ast.Constant(IOPERATOR_TO_STR[type(node.op)]), current, value], [])
        target = ast.Subscript(ast.Call(load("_write_"), [load(tmp_obj)], []), load(tmp_key), ast.Store())
        statements = [
            ast.Assign([ast.Name(tmp_obj, ast.Store())], container),
            ast.Assign([ast.Name(tmp_key, ast.Store())], key),
            ast.Assign([target], updated),
        ]
        for stmt in statements:
            copy_locations(stmt, node)
            ast.fix_missing_locations(stmt)
        return statements

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        self.error(node, "class definitions are not allowed; use functions, dicts and lists.")
        return node

    def visit_Import(self, node: ast.Import) -> Any:
        for alias in node.names:
            if alias.name not in self.allowed_modules:
                self.error(node, f'import of "{alias.name}" is not allowed (allowed: {_listing(self.allowed_modules)}).')
        return super().visit_Import(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> Any:
        if node.level or node.module not in self.allowed_modules:
            name = "." * node.level + (node.module or "")
            self.error(node, f'import from "{name}" is not allowed (allowed: {_listing(self.allowed_modules)}).')
        return super().visit_ImportFrom(node)


def _listing(names: Iterable[str]) -> str:
    return ", ".join(sorted(names))


def _policy_class(allowed_modules: frozenset[str], reserved_names: frozenset[str]) -> type[SandboxTransformer]:
    return type("BoundSandboxTransformer", (SandboxTransformer,),
                {"allowed_modules": allowed_modules, "reserved_names": reserved_names})


def compile_program(
    source: str,
    *,
    allowed_modules: frozenset[str] = DEFAULT_ALLOWED_MODULES,
    reserved_names: frozenset[str] = frozenset(),
) -> CompileOutcome:
    """Parse (syntax errors) then apply the policy (policy errors) and compile ``source``."""
    if not isinstance(source, str):
        return CompileOutcome(None, "syntax", f"the program must be a string, got {type(source).__name__}")
    if len(source) > MAX_SOURCE_CHARS:
        rule = f"program too long ({len(source)} > {MAX_SOURCE_CHARS} characters)"
        return CompileOutcome(None, "policy", rule, rule=rule)
    try:
        tree = ast.parse(source, PROGRAM_FILENAME, "exec")
    except SyntaxError as exc:
        where = f" (line {exc.lineno})" if exc.lineno else ""
        text = f": {exc.text.strip()}" if exc.text and exc.text.strip() else ""
        return CompileOutcome(None, "syntax", f"{type(exc).__name__}: {exc.msg}{where}{text}", exc.lineno)
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, absurd nesting
        return CompileOutcome(None, "syntax", f"{type(exc).__name__}: {str(exc)[:200]}")
    try:
        result = compile_restricted_exec(
            tree, PROGRAM_FILENAME, policy=_policy_class(allowed_modules, reserved_names)
        )
    except (RecursionError, MemoryError) as exc:
        return CompileOutcome(None, "syntax", f"{type(exc).__name__}: program too deeply nested")
    except SyntaxError as exc:  # the compiler's own checks (e.g. 'return' outside function)
        return CompileOutcome(None, "syntax", f"SyntaxError: {exc.msg} (line {exc.lineno})", exc.lineno)
    if result.errors:
        rule, line = _split_line(result.errors[0])
        more = f" (+{len(result.errors) - 1} more)" if len(result.errors) > 1 else ""
        where = f" (line {line})" if line is not None else ""
        return CompileOutcome(None, "policy", rule + where + more, line, rule)
    return CompileOutcome(result.code)


def _split_line(message: str) -> tuple[str, int | None]:
    """RestrictedPython writes errors as 'Line N: rule'; returns (rule, N)."""
    head, sep, rest = message.partition(": ")
    if sep and head.startswith("Line ") and head[5:].isdigit():
        return rest, int(head[5:])
    return message, None


def program_line(start_depth: int = 1) -> int | None:
    """The line of the innermost program frame on the current stack (None outside a program)."""
    frame: FrameType | None = sys._getframe(start_depth)
    while frame is not None:
        if frame.f_code.co_filename == PROGRAM_FILENAME:
            return frame.f_lineno
        frame = frame.f_back
    return None


class CappedText:
    """A text buffer that keeps the first ``limit`` characters and counts what it dropped."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0
        self.dropped = 0

    def write(self, text: str) -> None:
        room = self.limit - self.size
        if room > 0:
            piece = text[:room]
            self.parts.append(piece)
            self.size += len(piece)
        self.dropped += max(0, len(text) - max(room, 0))

    def getvalue(self) -> str:
        text = "".join(self.parts)
        return text + (f"\n[... {self.dropped} more characters not shown]" if self.dropped else "")


@dataclass
class RuntimePolicy:
    """Run-time guards handed to restricted code; records every refusal in ``violations``.

    ``attribute_allowlists`` maps a type to the only attributes its instances expose.
    """

    allowed_modules: frozenset[str] = DEFAULT_ALLOWED_MODULES
    attribute_allowlists: Mapping[type, frozenset[str]] = field(default_factory=dict)
    max_stdout_chars: int = 4000
    violations: list[tuple[str, int | None]] = field(default_factory=list)
    stdout: CappedText = field(init=False)

    def __post_init__(self) -> None:
        self.stdout = CappedText(self.max_stdout_chars)

    def new_step(self) -> None:
        self.violations = []
        self.stdout = CappedText(self.max_stdout_chars)

    def refuse(self, rule: str) -> NoReturn:
        self.violations.append((rule, program_line(2)))
        raise PolicyError(rule)

    # -------------------------------------------------------------- attributes
    def check_attribute(self, obj: Any, name: Any) -> None:
        if type(name) is not str:
            raise TypeError("attribute name must be a string")
        if name.startswith("_"):
            self.refuse(f'access to "{name}" is not allowed (names starting with "_" are private)')
        if name in INSPECT_ATTRIBUTES:
            self.refuse(f'access to "{name}" is not allowed (introspection)')
        if name in ("format", "format_map") and (
            isinstance(obj, str) or (isinstance(obj, type) and issubclass(obj, str))
        ):
            self.refuse("str.format() is not allowed; use f-strings")
        if isinstance(obj, ModuleType) and obj.__name__ not in self.allowed_modules:
            self.refuse(f'module "{obj.__name__}" is not allowed')
        if not isinstance(obj, type):
            for kind, allowed in self.attribute_allowlists.items():
                if isinstance(obj, kind) and name not in allowed:
                    self.refuse(f'"{name}" of {kind.__name__} is not available in programs')

    def check_value(self, value: Any, name: str) -> Any:
        if isinstance(value, ModuleType) and value.__name__ not in self.allowed_modules:
            self.refuse(f'"{name}" is module {value.__name__}, which is not allowed')
        if isinstance(value, (FrameType, CodeType, TracebackType)):
            self.refuse(f'"{name}" gives access to interpreter internals')
        return value

    def getattr(self, obj: Any, name: str, *default: Any) -> Any:
        self.check_attribute(obj, name)
        value = getattr(obj, name, *default)
        return self.check_value(value, name)

    def hasattr(self, obj: Any, name: str) -> bool:
        self.check_attribute(obj, name)
        return hasattr(obj, name)

    # ------------------------------------------------------------------ others
    def write(self, obj: Any) -> Any:
        # Item assignment only into plain containers (attribute assignment is refused at compile time).
        if isinstance(obj, (dict, list)):
            return obj
        self.refuse(f"cannot modify items of {type(obj).__name__} objects (only dicts and lists)")

    def import_module(
        self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> ModuleType:
        if level or name not in self.allowed_modules:
            self.refuse(f'import of "{name}" is not allowed')
        module = sys.modules.get(name)
        if module is None:  # allowed modules are imported before the limits apply
            self.refuse(f'module "{name}" is not available')
        for attr in fromlist or ():
            # 'from re import enum' reads the attribute without going through _getattr_.
            if not isinstance(attr, str) or attr.startswith("_"):
                self.refuse(f'importing "{attr}" from {name} is not allowed')
            self.check_value(getattr(module, attr, None), attr)
        return module

    def print_factory(self, _getattr_: Any = None) -> _Printer:
        return _Printer(self)

    def builtins(self) -> dict[str, Any]:
        table: dict[str, Any] = {n: getattr(builtins, n) for n in _SAFE_BUILTIN_NAMES + _SAFE_EXCEPTIONS}
        table.update({
            "None": None, "True": True, "False": False, "Ellipsis": Ellipsis, "NotImplemented": NotImplemented,
            "getattr": self.getattr, "hasattr": self.hasattr, "__import__": self.import_module,
            "PolicyError": PolicyError,
        })
        return table

    def guard_globals(self) -> dict[str, Any]:
        """The names RestrictedPython's rewritten code calls."""
        return {
            "__builtins__": self.builtins(),
            "__name__": "__program__",
            "_getattr_": self.getattr,
            "_getitem_": _getitem,
            "_write_": self.write,
            "_getiter_": iter,
            "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
            "_unpack_sequence_": guarded_unpack_sequence,
            "_inplacevar_": _inplacevar,
            "_apply_": _apply,
            "_print_": self.print_factory,
        }


class _Printer:
    """Target of the rewritten ``print``: captured into the step's capped stdout."""

    def __init__(self, policy: RuntimePolicy) -> None:
        self._policy = policy

    def _call_print(self, *objects: Any, sep: str | None = " ", end: str | None = "\n", file: Any = None,
                    flush: bool = False) -> None:
        if file is not None:
            self._policy.refuse("print(file=...) is not allowed")
        out = self._policy.stdout
        if out.size >= out.limit:  # keep huge outputs cheap once the cap is reached
            out.dropped += 1
            return
        out.write((" " if sep is None else str(sep)).join(str(o) for o in objects) + ("\n" if end is None else str(end)))


def _getitem(obj: Any, key: Any) -> Any:
    return obj[key]


def _inplacevar(op: str, target: Any, value: Any) -> Any:
    return _INPLACE_OPS[op](target, value)


def _apply(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return func(*args, **kwargs)
