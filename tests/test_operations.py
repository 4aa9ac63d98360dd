"""The operation table feeds the toolbox, the sandbox wire and proxy, the API text, the planner and the textualizer."""

from __future__ import annotations

import inspect

from hydra_vr.agent.roles import PromptSet
from hydra_vr.api import ImagePatch, VisionToolbox
from hydra_vr.api.operations import OPERATIONS, patch_methods, skill_text, tool_operations, toolbox_signature
from hydra_vr.api.spec import render_api
from hydra_vr.api.types import ToolCallRecord
from hydra_vr.memory.textualizer import textualize_call
from hydra_vr.sandbox.proxy import ProxyToolbox
from hydra_vr.sandbox.wire import TOOL_OPS


def test_every_row_is_a_toolbox_method_forwarded_with_its_signature():
    names = [op.name for op in tool_operations()]
    assert len(names) == len(set(names))
    assert TOOL_OPS == {n: len(toolbox_signature(n).parameters) for n in names}
    for name in names:
        assert callable(getattr(VisionToolbox, name)), name
        assert inspect.signature(getattr(ProxyToolbox, name)).parameters.keys() == toolbox_signature(name).parameters.keys()


def test_proxy_fills_defaults_so_the_wire_arity_always_matches():
    sent = []
    proxy = ProxyToolbox.__new__(ProxyToolbox)
    proxy._call = lambda op, *args: sent.append((op, args))  # type: ignore[method-assign]
    proxy.verify_property("img", "car", "red")
    proxy.colors("img")
    proxy.llm_query("who?")
    assert [(op, len(args)) for op, args in sent] == [("verify_property", 6), ("colors", 3), ("llm_query", 2)]
    assert sent[0][1][3:] == (False, None, None) and sent[1][1] == ("img", 3, False)


def test_api_text_lists_the_patch_methods_of_the_table():
    text = render_api()
    for method in patch_methods():
        assert callable(getattr(ImagePatch, method)), method
        assert f"def {method}(" in text, method


def test_planner_skills_come_from_the_table_plus_the_task():
    for op in OPERATIONS:
        if op.skill:
            assert op.skill in skill_text()
    grounding = PromptSet.for_task("grounding").skills
    assert grounding.startswith(skill_text().rstrip(".")) and "pick the middle one" in grounding


def test_textualizer_has_a_line_for_every_recorded_operation():
    from hydra_vr.api.types import Answer, LabelScore

    # A typical call of each operation (args and result as the toolbox records them).
    typical = {
        "find": ({"name": "bus"}, []), "verify_property": ({"name": "bus", "property": "red"}, True),
        "best_text_match": ({"options": ["red", "blue"]}, "red"), "simple_query": ({"question": "what?"}, Answer("bus", "describe")),
        "read_text": ({}, []), "compute_depth": ({"box": [0, 0, 10, 10]}, 3.0), "llm_query": ({"question": "who?"}, "a man"),
        "classify": ({"top_k": 1}, [LabelScore("tabby", 0.5)]), "best_image_match": ({"text": "a bus", "n": 2}, 1),
        "caption": ({}, "a bus"), "colors": ({"top_k": 3}, "red 50%"),
        "focus": ({"box": None, "background": True}, None), "standout": ({}, []),
    }
    for op in (op for op in tool_operations() if op.recorded):
        args, result = typical[op.record_name]
        line = textualize_call(ToolCallRecord(op.record_name, args, result, 1.0, {}))
        assert line and line.strip(), op


def test_best_image_match_without_a_matcher_stops_at_the_first_yes():
    # offline each candidate is a describe question (an LLM call): the ones after the first yes are not asked
    from PIL import Image

    from hydra_vr.api.types import Answer
    from hydra_vr.config import load_config

    class Votes:
        def __init__(self, yes_width: int | None) -> None:
            self.yes_width, self.asked = yes_width, []

        def answer(self, image, question):
            self.asked.append(image.width)
            return Answer("yes" if image.width == self.yes_width else "no", "votes")

    images = [Image.new("RGB", (w, 10)) for w in (10, 20, 30, 40)]
    toolbox = VisionToolbox(load_config("default").vision)
    toolbox._backends["vqa"] = votes = Votes(yes_width=20)
    assert toolbox.best_image_match(images, "a bus") == 1 and votes.asked == [10, 20]
    toolbox._backends["vqa"] = votes = Votes(yes_width=None)  # no yes: every one asked, the first kept
    assert toolbox.best_image_match(images, "a bus") == 0 and votes.asked == [10, 20, 30, 40]


def test_every_packaged_example_set_loads_and_renders_its_prompts():
    # a YAML slip (an unquoted "a: b" in a value) broke the OK-VQA set once: every set is read here
    from importlib import resources

    from hydra_vr.prompts import load_examples

    names = sorted(p.name[:-5] for p in resources.files("hydra_vr.prompts.examples").iterdir() if p.name.endswith(".yaml"))
    assert "okvqa" in names and "vqa" in names
    for name in names:
        assert load_examples(name), name
    okvqa = PromptSet.for_task("vqa", "okvqa")
    assert "world knowledge: history" in okvqa.skills


def test_every_toolbox_call_of_a_patch_is_an_operation_the_sandbox_forwards():
    # a patch method calling a toolbox method the table does not declare works in-process and fails in the sandbox
    import re

    import hydra_vr.api.image_patch as patch_module

    called = set(re.findall(r"_tools\(\)\.(\w+)", inspect.getsource(patch_module)))
    assert called and called <= {op.name for op in tool_operations()}, called - {op.name for op in tool_operations()}
