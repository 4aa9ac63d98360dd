"""A mechanical repair of the reasoner's most common slip, run before the LLM is asked again.

``rocket = image_patch.find("rocket")`` then ``rocket.simple_query(...)``: find() returns a list of
patches (best first), and the program calls a patch method on the list. In the stored vipergpt run of
the 124 labelled questions at b386176, 7 programs failed so; told the error, the 1.5B wrote the same
program again for 4 of them (the step then fell back to asking the whole image, and the found rocket's
colour became the sky's). The repair indexes the list's first patch, what ``find(...)[0]`` in the
prompt's examples does, and is traced as its own attempt.
"""

from __future__ import annotations

import ast
import re

from hydra_vr.api.image_patch import ImagePatch

PATCH_ATTRS = frozenset(n for n in dir(ImagePatch) if not n.startswith("_"))
_LIST_ATTR = re.compile(r"'list' object has no attribute '(\w+)'")
_LINE = re.compile(r"^line (\d+):", re.M)


def _is_find(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "find"


def _find_lists(tree: ast.AST) -> set[str]:
    """Names that are only ever bound to a find() result (so always a list of patches)."""
    bound: dict[str, bool] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound[target.id] = bound.get(target.id, True) and _is_find(node.value)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.setdefault(node.id, True)
        if isinstance(node, (ast.For, ast.comprehension, ast.AugAssign, ast.AnnAssign, ast.With, ast.NamedExpr)):
            for name in ast.walk(getattr(node, "target", node)):
                if isinstance(name, ast.Name):
                    bound[name.id] = False  # a loop variable or an update: not (only) a find() list
    return {name for name, only_find in bound.items() if only_find}


def first_patch_repair(code: str, error: str) -> tuple[str, str] | None:
    """(the program with ``[0]`` after each find() list a patch attribute is taken of, what was done), or
    None when ``error`` is not that slip or the program cannot be repaired so."""
    m, line = _LIST_ATTR.search(error or ""), _LINE.search(error or "")
    if m is None or line is None or m.group(1) not in PATCH_ATTRS:
        return None
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    attr, lineno = m.group(1), int(line.group(1))
    lists, names = _find_lists(tree), set()
    failing = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.lineno == lineno and n.attr == attr
               and (isinstance(n.value, ast.Name) and n.value.id in lists or _is_find(n.value))]
    if not failing:
        return None
    fix = {id(n): n for n in failing}
    for n in ast.walk(tree):  # every patch use of a name only ever bound to find()'s list would fail next
        if isinstance(n, ast.Attribute) and n.attr in PATCH_ATTRS and isinstance(n.value, ast.Name) and n.value.id in lists:
            fix[id(n)] = n
            names.add(n.value.id)
    lines = [s.encode() for s in code.split("\n")]  # ast columns are UTF-8 byte offsets
    for n in sorted(fix.values(), key=lambda n: (n.value.end_lineno, n.value.end_col_offset), reverse=True):
        row, col = n.value.end_lineno - 1, n.value.end_col_offset
        lines[row] = lines[row][:col] + b"[0]" + lines[row][col:]
    repaired = "\n".join(s.decode() for s in lines)
    try:
        ast.parse(repaired)
    except SyntaxError:
        return None
    what = ", ".join(sorted(names)) or "find(...)"
    return repaired, (f"find() returns a list of patches, best first; the program took .{attr} of the list "
                      f"({what}): repaired to take it of the first patch ([0])")


__all__ = ["PATCH_ATTRS", "first_patch_repair"]
