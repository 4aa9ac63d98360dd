"""A repair of a program that died on a list of things it never looked for, with the reason the trace keeps.

A small reasoner often passes a list of things it never looked for: ``get_patch_closest_to_anchor_object(kites, boy)``
with no ``kites = image_patch.find("kite")`` before it. The program then dies on a NameError, and
told so, the 1.5B wrote the same program again (the step's ``same`` refusal). A name that is never bound in the
program and that is the plural of a noun (WordNet) can only mean the things of that noun in the image: where the
program dies on it, the repair binds it to ``ImagePatch(image).find(<singular>)`` before the first line and runs it
again, without another call to the reasoner. Likewise a patch method called bare (``find("gear")``, no patch before
it) is the whole image's.
"""

from __future__ import annotations

import ast
import re

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


__all__ = ["bind_unbound_thing", "unbound_thing"]
