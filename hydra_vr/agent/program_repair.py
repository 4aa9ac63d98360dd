"""A repair of a program that died on a list of things it never looked for, with the reason the trace keeps.

A small reasoner often passes a list of things it never looked for: ``get_patch_closest_to_anchor_object(kites, boy)``
with no ``kites = image_patch.find("kite")`` before it. The program then dies on a NameError, and
told so, the 1.5B wrote the same program again (the step's ``same`` refusal). A name that is never bound in the
program and that is the plural of a noun (WordNet) can only mean the things of that noun in the image: where the
program dies on it, the repair binds it to ``ImagePatch(image).find(<singular>)`` before the first line and runs it
again, without another call to the reasoner. Likewise a patch method called bare (``find("gear")``, no patch before
it) is the whole image's, and the first of a find() that found nothing is the patch that was searched
(:func:`look_in_searched_patch`).
"""

from __future__ import annotations

import ast
import re
from collections import Counter

from hydra_vr.api.operations import patch_methods
from hydra_vr.lexicon import wordnet as wn


def _bound_names(tree: ast.AST) -> set[str]:
    """Every name the program binds: assignments, loop and comprehension targets, definitions and their
    arguments, imports, ``with ... as``, ``except ... as``."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound


_NAME_ERROR = re.compile(r"NameError: name '(\w+)' is not defined")


def _unbound_name(code: str, error: str) -> str | None:
    """The name ``error`` says is not defined, where ``code`` parses and binds it nowhere; None otherwise."""
    m = _NAME_ERROR.search(error or "")
    if m is None:
        return None
    try:
        return None if m.group(1) in _bound_names(ast.parse(code)) else m.group(1)
    except SyntaxError:
        return None


def unbound_thing(code: str, error: str) -> tuple[str, str] | None:
    """(name, the noun it is the plural of) where ``error`` is a NameError of a name that ``code`` never binds and that
    WordNet reads as the plural of a noun ("kites" -> kite); None otherwise (a name the program binds
    somewhere, or one that is no plural: a made-up helper, a singular whose one thing is unknown)."""
    name = _unbound_name(code, error)
    noun = _plural_of(name) if name is not None else None
    return (name, noun) if name is not None and noun is not None else None


def _plural_of(name: str) -> str | None:
    """The noun ``name`` is the plural of ("kites" -> kite), by WordNet; None for any other name."""
    if not name.isalpha():
        return None
    noun = wn.singular(name)
    return noun if noun != name and wn.is_noun(noun) else None


def bind_unbound_thing(code: str, error: str) -> tuple[str, str] | None:
    """``code`` with a first line binding its :func:`unbound_thing` to what find() returns for the noun, or a patch
    method it called bare to the whole image's, and why; None where ``error`` names neither."""
    name = _unbound_name(code, error)
    if name is None:
        return None
    if name in patch_methods():  # a method called bare asks it of the whole image
        line = f"{name} = ImagePatch(image).{name}"
    elif (noun := _plural_of(name)) is not None:
        line = f"{name} = ImagePatch(image).find({noun!r})"
    else:
        return None
    return f"{line}\n{code}", f"the program reads {name!r} without defining it: bound first as `{line}`"


def _found_list(node: ast.expr, finds: dict[str, ast.expr]) -> ast.expr | None:
    """The patch whose find() ``node`` is: ``<patch>.find(...)`` itself, or a name bound once to one (``finds``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "find":
        return node.func.value
    return finds.get(node.id) if isinstance(node, ast.Name) else None


def _first_or_last(index: ast.expr) -> bool:
    return isinstance(index, ast.Constant) and index.value == 0 or (
        isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub) and isinstance(index.operand, ast.Constant)
        and index.operand.value == 1)


def look_in_searched_patch(code: str, error: str | None, line: int | None) -> tuple[str, str] | None:
    """``code`` where the first or last of a find() that came back empty (``image_patch.find("gate")[0]``, or
    ``gates[0]`` of ``gates = image_patch.find("gate")``) dies on an IndexError at ``line``, with that patch
    read as ``(image_patch.find("gate") or [image_patch])[0]``, and why; None otherwise.

    Told the IndexError, the 1.5B wrote the same ``[0]`` again in most such steps (the step's ``same`` refusal),
    then the fallback asked the whole question of the whole image. A thing the tools do not find is, for the
    program's question about it, best looked at in the patch that was searched: the find still runs (the trace
    and the checks see that it found nothing), and the rest of the program runs on."""
    if line is None or "IndexError" not in (error or ""):
        return None
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    stores = Counter(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    finds: dict[str, ast.expr] = {}  # names bound once, to a find(): a list filtered since is no search's result
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and stores[node.targets[0].id] == 1 and (patch := _found_list(node.value, {})) is not None):
            finds[node.targets[0].id] = patch
    lines = code.splitlines()
    spans = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Subscript) and node.lineno == line == node.end_lineno and _first_or_last(node.slice)
                and (patch := _found_list(node.value, finds)) is not None):
            spans.append((node.value.col_offset, node.value.end_col_offset, ast.get_source_segment(code, patch)))
    if not spans or line > len(lines):
        return None
    text = lines[line - 1].encode()  # ast offsets count UTF-8 bytes
    for start, end, patch in sorted(spans, reverse=True):
        text = text[:start] + f"({text[start:end].decode()} or [{patch}])".encode() + text[end:]
    lines[line - 1] = text.decode()
    return "\n".join(lines) + "\n", (f"line {line} reads the first (or last) of what find() returned, and it found nothing: "
                                     f"read as `{lines[line - 1].strip()}`, the searched patch standing in")


__all__ = ["bind_unbound_thing", "look_in_searched_patch", "unbound_thing"]
