"""Every answering role is held to the question's answer type: snapshots on the labelled photos and questions.

These tests pin behaviour on the labelled real photos and their labelled questions and expressions
(benchmarks/real_photos/questions.jsonl): the tools run on a labelled photo with a labelled question or
expression, and what is expected is what that photo shows (measured colours, text read, places, boxes
drawn by hand). They are snapshots of behaviour on the benchmark's own items, not mechanism tests; the
mechanism tests, with phrasings of their own, are in tests/test_answer_roles.py.
"""

from __future__ import annotations

from hydra_vr.api.types import Box
from tests.test_answer_roles import Script, agent_for, ans, code, decide, plan, sandbox, toolbox_with_llm  # noqa: F401  (shared fixtures)


def test_describe_gives_the_colours_that_stand_out_when_the_thing_is_not_found(toolbox_with_llm, photo):
    from PIL import Image, ImageDraw

    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext

    d = DescribeVQA(ToolContext(toolbox=toolbox_with_llm, llm=None))
    # a small red triangle in a corner of a white page (easy-VQA's kind of picture): 1% of the pixels
    page = Image.new("RGB", (64, 64), (245, 255, 250))
    ImageDraw.Draw(page).polygon([(2, 52), (12, 52), (7, 43)], fill=(250, 0, 0))
    findings = d.describe(page, "What is the color of the triangle?")
    assert findings["colors"][0].startswith("white") and findings["subject_colors"][0].startswith("red")
    from hydra_vr.prompts import render_prompt

    text = render_prompt("vqa_describe_user", **findings, expected="a colour")
    # the subject first, and the whole-patch shares named for what they are (the 1.5B answered "white")
    assert text.index("stands out from the background") < text.index("Background colours (the patch border)")
    flower = d.describe(Image.open(photo("flower")).convert("RGB"), "What color is the flower?")
    assert flower["subject_colors"][0].startswith("orange")  # the petals, not the dark green background
    assert d.describe(page, "How many triangles are there?")["subject_colors"] is None  # colour questions only


def test_a_count_of_the_thing_that_has_them_is_rewritten_inside_the_step(toolbox_with_llm, sandbox, photo):
    # The 1.5B answered "How many wheels does the motorcycle have?" with len(find("motorcycle")) = 1.
    count_bikes = code('bikes = ImagePatch(image).find("motorcycle")\nfinal_answer = str(len(bikes))')
    count_wheels = code('bike = ImagePatch(image).find("motorcycle")[0]\nfinal_answer = str(len(bike.find("wheel")))')
    script = Script(reasoner=[count_bikes, count_wheels])
    result = agent_for(script, toolbox_with_llm, sandbox, mode="vipergpt").run(
        str(photo("motorcycle")), "How many wheels does the motorcycle have?")
    attempts = result.steps[0].attempts
    assert [a.error_kind for a in attempts] == ["miscount", None]
    assert "'1' is how many find('motorcycle') returned, but the question counts wheels" in attempts[0].error
    assert "counts wheels" in script.messages("reasoner")[1][-1].content  # the rewrite was told why
    # the answer now counts circles inside the motorcycle's box (wheels have no detector class)
    assert result.answer_source == "program" and int(result.answer) >= 1


def test_describe_lists_the_named_object_first_with_its_own_colours(toolbox_with_llm, photo):
    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext
    from PIL import Image

    d = DescribeVQA(ToolContext(toolbox=toolbox_with_llm, llm=None))
    findings = d.describe(Image.open(photo("bus")).convert("RGB"), "What color is the bus?")
    assert findings["relevant"] and findings["relevant"][0]["label"] == "bus"
    assert findings["relevant"][0]["colors"]  # measured on the bus's own pixels
    assert all(o["label"] != "bus" for o in findings["objects"])


def test_a_text_patch_returned_for_a_reading_question_is_answered_with_its_text(toolbox_with_llm, sandbox, photo):
    # programs for "What is the title ...?" return the title's patch; asked again, the describe LLM said "title"
    script = Script(
        planner=[plan("Find the title and return it")],
        reasoner=[code('final_answer = ImagePatch(image).find("title")[0]')],
        summarizer=[decide("answer", "region-based segmentation")],
    )
    result = agent_for(script, toolbox_with_llm, sandbox, max_steps=1).run(str(photo("page")), "What is the title at the top of the page?")
    assert result.ok, result.error
    assert result.steps[0].guess == "region-based segmentation"  # the program's own answer, not the summarizer's
    assert result.answer == "region-based segmentation"


def test_a_text_patch_is_no_answer_to_a_question_that_does_not_ask_to_read(toolbox_with_llm, sandbox, photo):
    from hydra_vr.agent.step import typed_guess
    from hydra_vr.question.frame import parse

    toolbox_with_llm.holder["llm"] = Script().chat
    program = sandbox.run('final_answer = ImagePatch(image).find("title")[0]', str(photo("page")))
    assert program.ok and isinstance(program.final_answer, dict)
    read, why = typed_guess(program, parse("What is the title at the top of the page?"))
    assert read == "region-based segmentation" and why is None
    kept, why = typed_guess(program, parse("What is at the top of the page?"))
    assert kept is None and "patch" in why


def test_describe_answers_a_background_colour_from_the_border(toolbox_with_llm, photo):
    from PIL import Image

    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext
    from hydra_vr.prompts import render_prompt

    d = DescribeVQA(ToolContext(toolbox=toolbox_with_llm, llm=None))
    flower = Image.open(photo("flower")).convert("RGB")
    asked = d.describe(flower, "What color is the background?")
    # the dark blue-green leaves around the orange dahlia, not the flower's colours: shown the flower as "the
    # likely subject", the 1.5B answered "orange"; the dark leaves keep their hue (teal), not black
    assert asked["background"] and asked["subject_colors"] is None
    assert [c.split()[0] for c in asked["colors"][:2]] == ["teal", "black"]
    text = render_prompt("vqa_describe_user", **asked, expected="a colour")
    assert "Background colours (the patch border): teal" in text and "stands out" not in text
    thing = d.describe(flower, "What color is the flower in the background?")  # a thing in it, not the background
    assert not thing["background"]


def test_describe_says_when_no_tool_looked_for_what_a_yes_no_question_asks(toolbox_with_llm, photo):
    from PIL import Image

    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext
    from hydra_vr.prompts import render_prompt

    d = DescribeVQA(ToolContext(toolbox=toolbox_with_llm, llm=None))
    cat = Image.open(photo("chelsea")).convert("RGB")
    for question, unchecked in [("Does the cat have stripes?", True), ("Is she smiling?", True),
                                ("Is there a cat in the photo?", False),  # the detector searched and found it
                                ("What color is the cat?", False)]:
        findings = d.describe(cat, question)
        assert findings["unchecked"] is unchecked, question
        text = render_prompt("vqa_describe_user", **findings, expected="yes or no")
        assert ("no evidence for \"no\"" in text) is unchecked, question


def test_describe_reads_the_text_of_a_page_for_a_question_about_what_is_on_it(toolbox_with_llm, photo):
    from PIL import Image

    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext

    d = DescribeVQA(ToolContext(toolbox=toolbox_with_llm, llm=None))
    page = Image.open(photo("page")).convert("RGB")
    texts = d.describe(page, "Is there any code on the page?")["texts"]
    assert texts is not None and any("np.zeros" in t for t in texts)  # the code line at the bottom
    assert d.describe(page, "How many people are there?")["texts"] is None  # OCR only where text may answer


def test_describe_reads_signs_for_a_city_and_lists_big_letters_first(toolbox_with_llm, photo):
    from PIL import Image

    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext
    from hydra_vr.prompts import render_prompt

    d = DescribeVQA(ToolContext(toolbox=toolbox_with_llm, llm=None))
    bus = Image.open(photo("bus")).convert("RGB").crop((15, 216, 793, 758))  # the bus's box
    city = d.describe(bus, "In which city was this photo taken?")  # no word about text, but a city is asked
    assert city["texts"] is not None and "MADRID" in city["texts"]
    big = d.describe(bus, "What words are written in big white letters on the side of the bus?")
    # "cero emisiones", two lines in the tallest letters (with the destination sign's), before the logos and
    # the small print; in reading order they came ninth and tenth
    assert big["texts"][:3] == ["M15OL/SEUILLA", "cero", "emisiones"] and big["texts_by_size"]
    assert "the largest letters first: M15OL/SEUILLA | cero | emisiones |" in render_prompt("vqa_describe_user", **big, expected="a phrase")
    plain = d.describe(bus, "What words are written on the side of the bus?")
    assert not plain["texts_by_size"] and sorted(plain["texts"]) == sorted(big["texts"])  # same lines, read order


def test_a_reading_answer_that_rewrote_the_text_is_put_back_as_read(toolbox_with_llm, photo):
    from PIL import Image

    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext

    bus = Image.open(photo("bus")).convert("RGB").crop((15, 216, 793, 758))  # the bus's box
    question = "What words are written in big white letters on the side of the bus?"
    # the 1.5B "corrected" the OCR's "cero" / "emisiones" (two lines of one block) to one word
    script = Script(describe=[ans("emissiones")])
    answer = DescribeVQA(ToolContext(toolbox=toolbox_with_llm, llm=lambda: script.chat)).answer(bus, question)
    assert answer.text == "cero emisiones" and answer.source == "describe:ocr"
    # an answer that is no line of the text, or a question that asks no reading, is left as said
    script = Script(describe=[ans("madrid bus")])
    assert DescribeVQA(ToolContext(toolbox=toolbox_with_llm, llm=lambda: script.chat)).answer(bus, question).text == "madrid bus"
    script = Script(describe=[ans("emissiones")])
    said = DescribeVQA(ToolContext(toolbox=toolbox_with_llm, llm=lambda: script.chat)).answer(bus, "What language is written on the bus?")
    assert said.text == "emissiones"


def test_a_yes_no_question_about_a_thing_reads_what_is_written_on_it(toolbox_with_llm, photo):
    from PIL import Image

    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext

    d = DescribeVQA(ToolContext(toolbox=toolbox_with_llm, llm=None))
    bus = Image.open(photo("bus")).convert("RGB")
    # "Is the bus electric?": the bus says "eléctrico", "cero emisiones" (the 1.5B answered no without them)
    for question in ("Is the bus electric?", "Is the bus electric? Answer yes or no."):  # simple_query, verify_property
        assert "emisiones" in d.describe(bus, question)["texts"], question
    assert d.describe(bus, "Is there a bus in the photo?")["texts"] is None  # a presence question: the search answers
    assert d.describe(bus, "How many people are there?")["texts"] is None


def test_a_place_in_the_photo_decided_by_depth_is_refused(toolbox_with_llm, sandbox, photo):
    # The 1.5B's program for the rocket: "edge" because the rocket is farther than half the whole image's depth
    from hydra_vr.agent.step import typed_guess
    from hydra_vr.question.frame import parse

    toolbox_with_llm.holder["llm"] = Script().chat  # no LLM call is expected: the boxes answer
    question = "Is the rocket in the middle or at the edge of the photo?"
    spec = parse(question)
    program = sandbox.run(
        "image_patch = ImagePatch(image)\n"
        'rocket = image_patch.find("rocket")[0]\n'
        'final_answer = "middle" if rocket.compute_depth() < image_patch.compute_depth() / 2 else "edge"\n',
        str(photo("rocket")))
    assert program.ok, program.error
    refused, why = typed_guess(program, spec)
    assert refused is None and "compute_depth" in why and "where it lies" in why
    # asked as given (the fallback), the tools place the rocket's box: in the middle
    program = sandbox.run(f"final_answer = ImagePatch(image).simple_query({question!r})", str(photo("rocket")))
    assert typed_guess(program, spec) == ("middle", None)
    # a place read from the box, no depth measured, is the program's own
    program = sandbox.run(
        "image_patch = ImagePatch(image)\n"
        'rocket = image_patch.find("rocket")[0]\n'
        'final_answer = "middle" if abs(rocket.horizontal_center - image_patch.width / 2) < image_patch.width / 4 else "edge"\n',
        str(photo("rocket")))
    assert typed_guess(program, spec) == ("middle", None)


def test_a_colour_region_that_is_another_objects_own_colour_is_matched_last(toolbox_with_llm, sandbox, photo):
    # "the red storage box on the shelf": no class names it, so the motorcycle photo's red regions are the
    # candidates; offline each crop is asked in turn and the first "yes" wins. The biggest, the motorcycle's
    # red tank and side panel, was asked first and taken. Run in the sandbox, as a program runs.
    def grounded(expression: str, name: str, image: str) -> Box:
        toolbox_with_llm.holder["llm"] = Script(describe=[ans("yes")]).chat
        program = sandbox.run(f"candidates = ImagePatch(image).find({name!r})\n"
                              f"final_answer = best_image_match(candidates, [{expression!r}])\n", str(photo(image)))
        assert program.ok, program.error
        assert program.calls[0].result[0].box.iou(first) > 0.9 if name == "red region" else True
        return Box(*boxes_of(program.final_answer)[0])

    from hydra_vr.agent.step import boxes_of

    first = Box(156, 153, 483, 284)  # the motorcycle's paint: the biggest red region, found first
    assert grounded("the red storage box on the shelf", "red region", "motorcycle").iou(Box(523, 180, 617, 255)) > 0.8
    # the expression names the motorcycle: its own colour is what is asked for, asked first
    assert grounded("the red part of the motorcycle", "red region", "motorcycle").iou(first) > 0.9
    # candidates that are not colour regions keep their order (the page's lines of text)
    assert grounded("the paragraph of text", "paragraph", "page").iou(Box(1, 46, 381, 140)) > 0.9
