"""The mechanical repair of find()'s list taken for a patch (agent.repair)."""

from __future__ import annotations

import ast

import pytest

from hydra_vr.agent.repair import first_patch_repair

ROCKET = '''image_patch = ImagePatch(image)
rocket = image_patch.find("rocket")
if rocket:
    rocket_color = rocket.simple_query("What color is the rocket?")
    final_answer = rocket_color
else:
    final_answer = image_patch.simple_query("What color is the rocket?")'''


def _error(line: int, attr: str) -> str:
    return f"line {line}: ...\nAttributeError: 'list' object has no attribute '{attr}'"


def test_a_patch_method_of_finds_list_is_taken_of_its_first_patch():
    repaired, what = first_patch_repair(ROCKET, _error(4, "simple_query"))
    assert 'rocket_color = rocket[0].simple_query("What color is the rocket?")' in repaired
    assert "if rocket:" in repaired and 'image_patch.simple_query("What color' in repaired  # the rest untouched
    assert "(rocket)" in what and "[0]" in what
    ast.parse(repaired)


def test_every_patch_use_of_a_find_list_is_repaired_at_once_and_chained_finds_too():
    code = ('image_patch = ImagePatch(image)\nbearded_man = image_patch.find("bearded man")\n'
            'shirt = bearded_man.find("shirt")\nfinal_answer = shirt.simple_query("What colour? é")\n'
            'x = image_patch.find("cup").width')
    repaired, _ = first_patch_repair(code, _error(3, "find"))
    assert 'shirt = bearded_man[0].find("shirt")' in repaired
    assert 'final_answer = shirt[0].simple_query("What colour? é")' in repaired  # byte offsets past a non-ASCII line
    assert 'image_patch.find("cup").width' in repaired  # not on the failing line, not a name: left to fail or not
    repaired, _ = first_patch_repair(repaired, _error(5, "width"))
    assert 'x = image_patch.find("cup")[0].width' in repaired


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (ROCKET, "line 4: ...\nNameError: name 'rocket' is not defined"),  # another error
        (ROCKET, _error(4, "append_to")),  # not a patch attribute
        ("men = p.find('man')\nfor men in men:\n    pass\nmen.width", _error(4, "width")),  # also a loop variable
        ("colors = ['red']\nx = colors.width", _error(2, "width")),  # a list the program built: not find()'s
        ("rocket = p.find('x'\n", _error(1, "width")),  # does not parse
    ],
)
def test_no_repair_where_it_is_not_that_slip(code, error):
    assert first_patch_repair(code, error) is None
