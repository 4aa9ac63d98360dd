"""A program that reads a list of things it never looked for ("umbrellas") is repaired and run again at once."""

from __future__ import annotations

import pytest

from hydra_vr.agent.program_repair import bind_unbound_thing, look_in_searched_patch, unbound_thing

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


_INDEX = "line {}: ... | IndexError: list index out of range"


def test_the_first_of_an_empty_find_is_the_searched_patch() -> None:
    body = "image_patch = ImagePatch(image)\nshed = image_patch.find('shed')[0]\nfinal_answer = shed.simple_query('Roof colour?')"
    fixed, why = look_in_searched_patch(body, _INDEX.format(2), 2)
    assert fixed.splitlines()[1] == "shed = (image_patch.find('shed') or [image_patch])[0]"
    assert fixed.splitlines()[2] == body.splitlines()[2] and "found nothing" in why
    # through a name bound once to the find, the last as well as the first
    body = "p = ImagePatch(image)\nsheds = p.find('shed')\nfinal_answer = sheds[-1].simple_query('Roof colour?')"
    assert look_in_searched_patch(body, _INDEX.format(3), 3)[0].splitlines()[2] == \
        "final_answer = (sheds or [p])[-1].simple_query('Roof colour?')"


@pytest.mark.parametrize(("body", "line"), [
    ("p = ImagePatch(image)\nsheds = p.find('shed')\nsheds = [s for s in sheds if s.exists('door')]\nx = sheds[0]", 4),  # filtered
    ("p = ImagePatch(image)\nx = p.find('shed')[1]", 2),  # the second of one found: not a search that found nothing
    ("p = ImagePatch(image)\nx = [1, 2][5]", 2),  # no find
    ("p = ImagePatch(image)\nx = p.find('shed')[0]\ny = 1", 3),  # the error is on another line
])
def test_other_index_errors_are_left_to_the_reasoner(body: str, line: int) -> None:
    assert look_in_searched_patch(body, _INDEX.format(line), line) is None
    assert look_in_searched_patch("x = ImagePatch(image).find('a')[0]", "ZeroDivisionError", 1) is None
