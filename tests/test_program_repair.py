"""A program that reads a list of things it never looked for ("umbrellas") is repaired and run again at once."""

from __future__ import annotations

import pytest

from hydra_vr.agent.program_repair import bind_unbound_thing, unbound_thing

_ERR = "line 3: kite = kites[0] | NameError: name '{}' is not defined"


def test_a_plural_noun_never_bound_is_what_find_returns_for_its_noun() -> None:
    body = "image_patch = ImagePatch(image)\nboy = image_patch.find('boy')[0]\nkite = kites[0]\nfinal_answer = kite.simple_query('Colour?')"
    assert unbound_thing(body, _ERR.format("kites")) == ("kites", "kite")
    fixed, why = bind_unbound_thing(body, _ERR.format("kites"))
    assert fixed.splitlines()[0] == "kites = ImagePatch(image).find('kite')"
    assert fixed.endswith(body) and "'kites' without defining it" in why


@pytest.mark.parametrize(("body", "name"), [
    ("kite = kites[0]\nkites = []", "kites"),  # bound in the program, read before: not a missing list
    ("final_answer = sort_kites_by_size(x)", "sort_kites_by_size"),  # a made-up helper, not a plural
    ("final_answer = kite.simple_query('?')", "kite"),  # a singular: which one is meant is unknown
    ("final_answer = qwzxv[0]", "qwzxv"),  # no noun at all
])
def test_other_unknown_names_are_left_to_the_reasoner(body: str, name: str) -> None:
    assert unbound_thing(body, _ERR.format(name)) is None
    assert unbound_thing("final_answer = kites[0]", "ZeroDivisionError: division by zero") is None



def test_a_patch_method_called_bare_is_the_whole_images() -> None:
    body = "gears = find('gear')\nfinal_answer = str(len(gears))"
    fixed, why = bind_unbound_thing(body, "line 1: gears = find('gear') | NameError: name 'find' is not defined")
    assert fixed.splitlines()[0] == "find = ImagePatch(image).find" and "'find' without defining it" in why
    # a helper of its own the program defines is no patch method called bare
    assert bind_unbound_thing("def find(x):\n    return []\nfinal_answer = find('y')",
                              "NameError: name 'find' is not defined") is None
