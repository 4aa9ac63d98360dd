"""Sandbox: benign programs, the whole ImagePatch API through the tool proxy, episodes and results."""

from __future__ import annotations

import importlib.util
import os
import pickle
import time
from typing import Any

import pytest
from PIL import Image

from hydra_vr.api import bind_toolbox
from hydra_vr.api.helpers import API_FUNCTIONS
from hydra_vr.api.types import Answer, Box, ColorShare, Detection, LabelScore, TextRegion, frame_sides
from hydra_vr.sandbox import ProgramResult, Sandbox, run_program
from hydra_vr.sandbox.proxy import ProxyToolbox
from hydra_vr.sandbox.report import to_plain
from hydra_vr.sandbox.tool_server import ToolServer
from hydra_vr.sandbox.wire import TOOL_OPS, loads_untrusted


class FakeToolbox:
    """Deterministic stand-in for VisionToolbox; records what reached it (image sizes, arguments)."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.sides: list[tuple] = []  # which sides of each simple_query image lie on the photo frame

    def find(self, image: Image.Image, name: str, presumed: bool = False) -> list[Detection]:
        self.calls.append(("find", image.size, name))
        if not name:
            raise ValueError("find() needs a non-empty object name")
        if name == "nothing":
            return []
        w, h = image.size
        # Two objects in the crop's own pixels; the API shifts them into original-image pixels.
        return [
            Detection(Box(w * 0.5, h * 0.1, w * 0.9, h * 0.6), name, 0.9, "fake", query=name),
            Detection(Box(w * 0.05, h * 0.2, w * 0.3, h * 0.7), name, 0.6, "fake", query=name),
        ]

    def read_text(self, image: Image.Image) -> list[TextRegion]:
        self.calls.append(("read_text", image.size))
        return [TextRegion(Box(40, 0, 60, 10), "world", 0.8), TextRegion(Box(0, 0, 20, 10), "hello", 0.9)]

    def classify(self, image: Image.Image, top_k: int = 5) -> list[LabelScore]:
        self.calls.append(("classify", image.size, top_k))
        return [LabelScore("mug", 0.7)][:top_k]

    def colors(self, image: Image.Image, top_k: int = 3, foreground: bool = False) -> list[ColorShare]:
        self.calls.append(("colors", image.size, top_k, foreground))
        return [ColorShare("red", 1.0, (255, 0, 0))][:top_k]

    def depth(self, original: Image.Image, box: Box) -> float:
        self.calls.append(("depth", original.size, box.to_list()))
        return box.x1 / 100.0

    def simple_query(self, image: Image.Image, question: str, box: Box | None = None, photo_size: Any = None) -> Answer:
        self.calls.append(("simple_query", image.size, question))
        self.sides.append(frame_sides(image))
        return Answer(f"{question} -> {image.size[0]}x{image.size[1]} mean {_mean(image)}", "fake")

    def verify_property(self, image: Image.Image, name: str, prop: str, foreground: bool = False, box: Box | None = None,
                        photo_size: Any = None) -> tuple[bool, str]:
        self.calls.append(("verify_property", image.size, name, prop, foreground))
        return prop == "red", "fake evidence"

    def best_text_match(self, image: Image.Image, options: list[str], foreground: bool = False) -> str:
        self.calls.append(("best_text_match", image.size, options, foreground))
        return options[-1]

    def best_image_match(self, images: list[Image.Image], text: str, boxes: Any = None, labels: Any = None,
                         photo: Any = None) -> int:
        self.calls.append(("best_image_match", [i.size for i in images], text))
        return max(range(len(images)), key=lambda i: images[i].size[0] * images[i].size[1])

    def caption(self, image: Image.Image) -> str:
        self.calls.append(("caption", image.size))
        return "a fake caption"

    def names_label(self, name: str, label: str | None) -> bool:
        self.calls.append(("names_label", name, label))
        return name == label

    def llm_query(self, question: str, long_answer: bool = True) -> str:
        self.calls.append(("llm_query", question, long_answer))
        return f"llm says {question} ({'long' if long_answer else 'short'})"


def _mean(image: Image.Image) -> int:
    px = list(image.convert("L").getdata())
    return round(sum(px) / len(px))


ALL_API_PROGRAM = """
patch = ImagePatch(image)
cups = patch.find("cup")
first = cups[0]
left_half = patch.crop(0, 0, patch.width / 2, patch.height)
inner = left_half.find("cup")
has_cup = patch.exists("cup")
has_nothing = patch.exists("nothing")
red = first.verify_property("cup", "red")
blue = first.verify_property("cup", "blue")
color = first.best_text_match(["green", "red"])
what = first.simple_query("what is this?")
behind = first.simple_query("what is behind the cup?")
text = patch.read_text()
depths = [round(c.compute_depth(), 3) for c in cups]
overlap = first.overlaps_with(first.x1 + 1, first.y1 + 1, first.x2 + 50, first.y2)
fact = patch.llm_query("capital of France?", long_answer=False)
best = best_image_match(cups, ["the striped cup"])
best_index = best_image_match(cups, ["the striped cup"], return_index=True)
d = round(distance(cups[0], cups[1]), 3)
yn = bool_to_yesno(has_cup)
num = coerce_to_numeric("there are 3 cups")
ltr = [c.box for c in sort_patches_left_to_right(cups)]
ttb = [c.box for c in sort_patches_top_to_bottom(cups)]
ftb = [c.box for c in sort_patches_front_to_back(cups)]
middle = get_middle_patch(cups).box
closest = get_patch_closest_to_anchor_object(cups, left_half).box
farthest = get_patch_farthest_from_anchor_object(cups, left_half).box
geometry = (patch.width, patch.height, first.horizontal_center, first.vertical_center, first.area)
crop_size = first.cropped_image.size
final_answer = [first, has_cup, has_nothing, red, blue, color, what, text, depths, overlap, fact,
                best.box, best_index, d, yn, num, ltr, ttb, ftb, middle, closest, farthest,
                geometry, crop_size, [c.box for c in inner], first.label, first.parent.box, behind]
"""


@pytest.fixture(scope="module")
def picture(tmp_path_factory: pytest.TempPathFactory) -> str:
    # A gradient, so that crops of different places have different pixels.
    img = Image.new("RGB", (240, 160))
    img.putdata([(x, y, (x + y) % 256) for y in range(160) for x in range(240)])
    path = tmp_path_factory.mktemp("sandbox") / "gradient.png"
    img.save(path)
    return str(path)


@pytest.fixture(scope="module")
def fake() -> FakeToolbox:
    return FakeToolbox()


@pytest.fixture(scope="module")
def sandbox(fake: FakeToolbox):
    with Sandbox(fake, timeout_s=5.0, memory_mb=256) as sb:
        yield sb


@pytest.fixture
def fresh(sandbox: Sandbox) -> Sandbox:
    sandbox.reset()
    return sandbox


def _in_process(code: str, image_path: str, toolbox: FakeToolbox) -> dict:
    """The same program run directly (trusted), as the reference for the proxied run."""
    ns = {"image": Image.open(image_path).convert("RGB"), "ImagePatch": bind_toolbox(toolbox)}
    ns.update({f.__name__: f for f in API_FUNCTIONS})
    exec(code, ns)
    return ns


def test_whole_api_through_the_proxy_matches_direct_calls(fresh: Sandbox, fake: FakeToolbox, picture: str) -> None:
    fake.calls.clear()
    res = fresh.run(ALL_API_PROGRAM, picture)
    assert res.ok, res.error
    sandbox_calls = list(fake.calls)
    fake.calls.clear()
    reference = _in_process(ALL_API_PROGRAM, picture, fake)
    assert res.final_answer == to_plain(reference["final_answer"])
    # The parent's toolbox saw the same crops (sizes) and arguments as a direct run would send.
    assert sandbox_calls == fake.calls
    assert res.tool_calls == len(sandbox_calls) == 18
    # "behind the cup" asked of the cup's own patch is asked of the whole photo (the crop holds the cup only)
    assert ("names_label", "cup", "cup") in sandbox_calls and res.final_answer[-1].startswith("what is behind the cup? -> 240x160")
    # A detected object's colours are read from its foreground: the flag crosses the wire.
    assert ("verify_property", (96, 80), "cup", "red", True) in sandbox_calls
    assert ("best_text_match", (96, 80), ["green", "red"], True) in sandbox_calls
    # Spot checks of the values themselves.
    answer = res.final_answer
    assert answer[0]["type"] == "ImagePatch" and answer[0]["box"] == [120.0, 16.0, 216.0, 96.0]
    assert answer[7] == "hello world"  # read_text orders regions left to right
    assert answer[1:6] == [True, False, True, False, "red"]
    assert answer[6].startswith("what is this? -> 96x80 mean ")


def test_variables_are_reported_with_boxes(fresh: Sandbox, picture: str) -> None:
    res = fresh.run("patch = ImagePatch(image)\ncups = patch.find('cup')\nn = len(cups)\nlabel = cups[0].label", picture)
    assert res.ok, res.error
    by_name = {v.name: v for v in res.variables}
    assert set(by_name) == {"patch", "cups", "n", "label"}
    assert by_name["patch"].type == "ImagePatch" and by_name["patch"].box == [0.0, 0.0, 240.0, 160.0]
    assert by_name["cups"].type == "list[ImagePatch]"
    assert by_name["cups"].boxes == [[120.0, 16.0, 216.0, 96.0], [12.0, 32.0, 72.0, 112.0]]
    assert by_name["n"].repr == "2" and by_name["label"].repr == "'cup'"
    assert not res.has_final_answer and res.final_answer is None


def test_a_found_list_used_as_one_patch_reads_its_most_confident_patch(fresh: Sandbox, fake: FakeToolbox,
                                                                       picture: str) -> None:
    # Programs often write `lamp = find("lamp")` and then `lamp.simple_query(...)`: the list stands for its first patch.
    res = fresh.run("lamps = ImagePatch(image).find('lamp')\nleft = lamps.x1\nsub = lamps.find('switch')\n"
                    "final_answer = lamps.simple_query('Is it lit?')", picture)
    assert res.ok, res.error
    by_name = {v.name: v for v in res.variables}
    assert by_name["lamps"].type == "list[ImagePatch]" and by_name["left"].repr == "120.0"
    assert by_name["sub"].boxes[0] == [168.0, 24.0, 206.4, 64.0]  # searched inside the first lamp, not the photo
    assert fake.calls[-1][:2] == ("simple_query", (96, 80))  # the first lamp's crop
    # Nothing found: still an error that names what was searched for; list methods and private names are as before.
    empty = fresh.run("none = ImagePatch(image).find('nothing')\nn = len(none)\nx = none.simple_query('What is it?')", picture)
    assert (empty.ok, empty.error_kind) == (False, "runtime")
    assert "find('nothing') found nothing" in empty.error and {v.name for v in empty.variables} >= {"none", "n"}
    assert fresh.run("c = ImagePatch(image).find('cup')\nc.append(1)\nfinal_answer = c.count(1)", picture).final_answer == 1
    private = fresh.run("c = ImagePatch(image).find('cup')\nt = c._toolbox", picture)
    assert private.error_kind == "policy"
    other = fresh.run("c = ImagePatch(image).find('cup')\nt = c.no_such_thing", picture)
    assert other.error_kind == "runtime" and "'list' object has no attribute 'no_such_thing'" in other.error


def test_variables_persist_across_steps_and_only_changes_are_reported(fresh: Sandbox, picture: str) -> None:
    first = fresh.run("cups = ImagePatch(image).find('cup')\ncount = 0\nnames = []", picture)
    assert first.ok
    second = fresh.run("count = len(cups)\nnames.append('x')\ntmp = 1", picture)
    assert second.ok, second.error
    assert {v.name for v in second.variables} == {"count", "names", "tmp"}  # cups unchanged
    third = fresh.run("del tmp\nfinal_answer = f'{count} cups: ' + ', '.join(names)", picture)
    assert third.ok and third.final_answer == "2 cups: x"
    assert third.deleted == ["tmp"]
    # A later step without the image still works on the episode's patches.
    later = fresh.run("final_answer = len(cups[0].find('cup'))")
    assert later.ok and later.final_answer == 2, later.error
    fresh.reset()
    gone = fresh.run("n = len(cups)", picture)
    assert gone.error_kind == "runtime" and "NameError" in gone.error


BENIGN = [
    ("loops", "t = 0\nfor i in range(10):\n    if i % 2:\n        continue\n    t += i\nwhile t > 5:\n    t -= 5\nfinal_answer = t", 5),
    ("comprehensions", "final_answer = sorted({k: v for k, v in zip('abc', [3, 1, 2])}.items(), key=lambda kv: kv[1])",
     [["b", 1], ["c", 2], ["a", 3]]),
    ("generators", "def gen(n):\n    for i in range(n):\n        yield i * i\nfinal_answer = sum(gen(4)) + next(iter([5]))", 19),
    ("math", "import math\nfrom math import sqrt\nfinal_answer = round(math.pi * sqrt(16) + math.floor(2.7), 3)", 14.566),
    ("fstrings", "x = 3.14159\nname = 'cup'\nfinal_answer = f'{name!r}: {x:.2f} {len(name):>3}'", "'cup': 3.14   3"),
    ("unpacking", "a, (b, c) = 1, (2, 3)\nfirst, *rest = [1, 2, 3]\nfor i, (p, q) in enumerate([(1, 2)]):\n    s = i + p + q\nfinal_answer = [a + b + c, rest, s]",
     [6, [2, 3], 3]),
    ("exceptions", "try:\n    [][1]\nexcept IndexError as e:\n    msg = str(e)\nfinally:\n    done = True\nfinal_answer = (msg, done)",
     ["list index out of range", True]),
    ("strings", "s = ' Hello, World '\nfinal_answer = [s.strip().lower(), s.split(','), 'x'.join('ab'), s.replace('l', 'L').count('L'), '%d%%' % 5]",
     ["hello, world", [" Hello", " World "], "axb", 3, "5%"]),
    ("dict_list_ops", "d = {}\nd['a'] = [1]\nd['a'] += [2]\ncount = {'k': 0}\nfor _ in range(3):\n    count['k'] += 1\nl = [3, 1, 2]\nl[1:2] += [7]\nl.sort()\nl[0] = 9\ndel l[1]\nfinal_answer = [d, count, l, max(l), min(l), any(l), all([])]",
     [{"a": [1, 2]}, {"k": 3}, [9, 3, 7], 9, 3, True, True]),
    ("allowed_modules", "import re\nimport itertools\nimport collections\nimport statistics\nc = collections.Counter('aab')\n"
     "final_answer = [re.findall(r'\\d+', 'a1b22'), list(itertools.islice(itertools.count(), 3)), c['a'], statistics.mean([1, 2, 3])]",
     [["1", "22"], [0, 1, 2], 2, 2]),
    ("closures", "def make(k):\n    def add(x):\n        return x + k\n    return add\nfinal_answer = list(map(make(2), [1, 2]))", [3, 4]),
    ("walrus_and_ternary", "final_answer = [y for x in range(5) if (y := x * 2) > 4] if True else None", [6, 8]),
]


@pytest.mark.parametrize("code,expected", [b[1:] for b in BENIGN], ids=[b[0] for b in BENIGN])
def test_benign_programs(fresh: Sandbox, code: str, expected: object) -> None:
    res = fresh.run(code)
    assert res.ok, res.error
    assert res.final_answer == expected


def test_print_is_captured(fresh: Sandbox) -> None:
    res = fresh.run("print('a', 1, sep='-')\nfor i in range(2):\n    print(i, end=';')")
    assert res.ok and res.stdout == "a-1\n0;1;"


def test_runtime_error_names_the_failing_line(fresh: Sandbox) -> None:
    code = "x = 1\ndef f(d):\n    return d['missing']\ny = f({})\nz = 2"
    res = fresh.run(code)
    assert (res.ok, res.error_kind, res.line) == (False, "runtime", 3)
    assert res.error == "line 3: return d['missing']\nKeyError: 'missing'"
    assert [v.name for v in res.variables] == ["x"]  # what ran before the failure is still reported


def test_syntax_error(fresh: Sandbox) -> None:
    res = fresh.run("x = 1\nif x\n    y = 2")
    assert res.error_kind == "syntax" and res.line == 2 and "SyntaxError" in res.error


def test_tool_errors_reach_the_program_with_their_type(fresh: Sandbox, picture: str) -> None:
    res = fresh.run("p = ImagePatch(image)\nok = p.exists('cup')\nbad = p.find('')", picture)
    assert res.error_kind == "runtime" and res.line == 3
    assert res.error.endswith("ValueError: find() needs a non-empty object name")
    caught = fresh.run("try:\n    ImagePatch(image).find('')\nexcept ValueError:\n    final_answer = 'caught'", picture)
    assert caught.ok and caught.final_answer == "caught"


def test_without_toolbox_vision_calls_fail_clearly(picture: str) -> None:
    res = run_program("p = ImagePatch(image)\nw = p.width\ncups = p.find('cup')", picture, timeout_s=5)
    assert res.error_kind == "runtime" and res.line == 3
    assert "no vision tools configured" in res.error
    no_image = run_program("p = ImagePatch(image)")
    assert no_image.error_kind == "runtime" and "no image" in no_image.error


def test_run_program_one_shot_and_with_session(fake: FakeToolbox, sandbox: Sandbox, picture: str) -> None:
    first = run_program("secret = 41\nfinal_answer = secret + 1", timeout_s=5)
    assert isinstance(first, ProgramResult) and first.ok and first.final_answer == 42
    again = run_program("final_answer = secret", timeout_s=5)  # one-shot: a fresh namespace
    assert again.error_kind == "runtime" and "NameError" in again.error
    with_tools = run_program("final_answer = len(ImagePatch(image).find('cup'))", picture, toolbox=fake)
    assert with_tools.ok and with_tools.final_answer == 2 and with_tools.tool_calls == 1
    sandbox.reset()
    run_program("kept = 'yes'", namespace_session=sandbox)
    assert run_program("final_answer = kept", namespace_session=sandbox).final_answer == "yes"


def test_timeout_restarts_the_child_and_the_next_program_works(fake: FakeToolbox, picture: str) -> None:
    with Sandbox(fake, timeout_s=0.5) as sb:
        assert sb.run("before = 1").ok
        pid = sb.pid
        res = sb.run("while True:\n    pass")
        assert res.error_kind == "timeout" and res.namespace_lost and "0.5 s" in res.error
        after = sb.run("final_answer = len(ImagePatch(image).find('cup'))", picture)
        assert after.ok and after.final_answer == 2
        assert sb.pid != pid and sb.restarts == 1
        assert sb.run("x = before").error_kind == "runtime"  # the earlier namespace is gone


def test_tool_time_does_not_count_against_the_program_timeout(picture: str) -> None:
    class SlowToolbox(FakeToolbox):
        def simple_query(self, image: Image.Image, question: str, box: Box | None = None, photo_size: Any = None) -> Answer:
            time.sleep(0.3)
            return Answer("slow", "fake")

    with Sandbox(SlowToolbox(), timeout_s=0.4) as sb:
        res = sb.run("p = ImagePatch(image)\nfinal_answer = [p.simple_query('q') for _ in range(3)]", picture)
        assert res.ok, res.error
        assert res.final_answer == ["slow"] * 3 and res.timings.tools >= 900


def test_parent_image_is_sent_once_and_crops_travel_by_reference(sandbox: Sandbox, fake: FakeToolbox, picture: str) -> None:
    sandbox.reset()
    res = sandbox.run("p = ImagePatch(image)\nc = p.crop(10, 20, 50, 60)\nq = c.simple_query('x')\n"
                      "r = ImagePatch(image.rotate(90)).simple_query('y')", picture)
    assert res.ok, res.error
    # The crop reached the parent as the right pixels; the rotated image went as pixels.
    assert fake.calls[-2] == ("simple_query", (40, 40), "x")
    assert fake.calls[-1] == ("simple_query", (240, 160), "y")
    reference = Image.open(picture).convert("RGB").crop((10, 20, 50, 60))
    assert res.variable("q").repr.endswith(f"mean {_mean(reference)}'")


def test_a_crop_reaches_the_parent_saying_which_of_its_sides_the_photo_frame_cuts(sandbox: Sandbox, fake: FakeToolbox,
                                                                                    picture: str) -> None:
    sandbox.reset()
    width, height = Image.open(picture).size
    res = sandbox.run(f"p = ImagePatch(image)\na = p.crop(0, 20, {width}, 60).simple_query('x')\n"
                      f"b = p.crop(10, 20, 50, {height}).simple_query('y')\nc = p.simple_query('z')", picture)
    assert res.ok, res.error
    assert fake.sides[-3:] == [(True, False, True, False), (False, False, False, True), (True, True, True, True)]


def test_tool_server_refuses_malformed_requests(fake: FakeToolbox) -> None:
    server = ToolServer()
    server.images = {"img1": Image.new("RGB", (20, 10))}
    assert server.answer(fake, "find", (("imgref", "img1", (0, 0, 10, 10)), "cup", False))[0] == "tool_ok"
    for op, args in [
        ("find", (("imgref", "img1", (0, 0, 10, 10)), "cup")),  # the proxy always sends every argument
        ("__init__", ()),
        ("recording", ()),
        ("find", (("imgref", "img9", None), "cup", False)),
        ("find", (("imgref", "img1", (0, 0, 1.5, 2)), "cup", False)),
        ("find", (("pixels", "RGB", 2, 2, b"123"), "cup", False)),
        ("find", ("not an image",)),
    ]:
        reply = server.answer(fake, op, args)
        assert reply[0] == "tool_err", (op, args)


def test_config_and_bad_image_path(tmp_path) -> None:
    from hydra_vr.api import ImageLoadError
    from hydra_vr.config import SandboxConfig

    with Sandbox(config=SandboxConfig(timeout_s=0.7, memory_mb=300, cpu_s=3)) as sb:
        assert (sb.timeout_s, sb.memory_mb, sb.cpu_s) == (0.7, 300, 3.0)
        with pytest.raises(ImageLoadError):  # the caller's mistake, not the program's
            sb.run("x = 1", str(tmp_path / "missing.png"))
    with pytest.raises(Exception, match="closed"):
        sb.run("x = 1")


def test_proxy_covers_every_tool_operation() -> None:
    assert all(callable(getattr(ProxyToolbox, op, None)) for op in TOOL_OPS)
    from hydra_vr.api.toolbox import VisionToolbox

    assert all(callable(getattr(VisionToolbox, op, None)) for op in TOOL_OPS)


def test_child_messages_cannot_carry_objects() -> None:
    assert loads_untrusted(pickle.dumps({"a": [1, 2.0, "x", b"y", (None, True)]})) == {"a": [1, 2.0, "x", b"y", (None, True)]}
    with pytest.raises(pickle.UnpicklingError):
        loads_untrusted(pickle.dumps(Box(1, 2, 3, 4)))
    with pytest.raises(pickle.UnpicklingError):
        loads_untrusted(pickle.dumps(os.system))


def test_child_is_locked_down(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HYDRA_SANDBOX_SECRET", "do-not-leak")
    with Sandbox() as sb:
        sb.wait_ready()
        limits = sb.limits
        assert limits["nofile"] == "0" and limits["core"] == "0" and int(limits["as"]) > 0
        with open(f"/proc/{sb.pid}/environ", "rb") as fh:
            env = fh.read()
        assert b"HYDRA_SANDBOX_SECRET" not in env and b"do-not-leak" not in env
        assert os.readlink(f"/proc/{sb.pid}/cwd") == str(sb.workdir)


REAL_BACKEND = importlib.util.find_spec("hydra_vr.api.backends.nanodet") is not None


@pytest.mark.slow
@pytest.mark.skipif(not REAL_BACKEND, reason="the NanoDet backend (hydra_vr/api/backends/nanodet.py) is not there yet")
def test_real_toolbox_finds_objects_through_the_sandbox(photo) -> None:
    from hydra_vr.api.toolbox import VisionToolbox
    from hydra_vr.config import VisionConfig

    toolbox = VisionToolbox(VisionConfig(faces=None, ocr=None, classifier=None))
    path = photo("coffee")
    res = run_program("cups = ImagePatch(image).find('cup')\nfinal_answer = len(cups)", str(path), toolbox=toolbox, timeout_s=30)
    assert res.ok, res.error
    assert res.final_answer >= 1
    cups = res.variable("cups")
    assert cups is not None and cups.type == "list[ImagePatch]" and len(cups.boxes) == res.final_answer
    x1, y1, x2, y2 = cups.boxes[0]
    w, h = Image.open(path).size
    assert 0 <= x1 < x2 <= w and 0 <= y1 < y2 <= h


class _YesNoToolbox(FakeToolbox):
    def simple_query(self, image: Image.Image, question: str, box: Box | None = None, photo_size: Any = None) -> Answer:
        self.calls.append(("simple_query", image.size, question))
        return Answer("no" if "modern" in question else "yes", "fake")


def test_a_no_reply_is_false_in_an_if_and_plain_text_everywhere_else(picture: str) -> None:
    # "modern" if modern else "traditional": the 1.5B tests a yes/no reply as a flag (china-choice-1)
    program = (
        "patch = ImagePatch(image)\n"
        "modern = patch.simple_query('Is the building modern?')\n"
        "old = patch.simple_query('Is the building traditional?')\n"
        "kind = 'modern' if modern else 'traditional'\n"
        "if patch.simple_query('Is it modern?'):\n"
        "    kind = 'modern'\n"
        "found = patch.find(modern)\n"  # a reply passed back to a tool crosses the wire as plain text
        "final_answer = [kind, modern, bool(old), modern == 'no', modern.upper(), found[0].label]"
    )
    toolbox = _YesNoToolbox()
    with Sandbox(toolbox, timeout_s=5.0, memory_mb=256) as sb:
        res = sb.run(program, picture)
    assert res.ok, res.error
    assert res.final_answer == ["traditional", "no", True, True, "NO", "no"]
    assert type(res.final_answer[1]) is str
    assert {v.name: v.type for v in res.variables}["modern"] == "str"  # what the textualizer shows
    # the same in-process (hydra_vr.load()'s ImagePatch); the real toolbox takes a "no" reply as a question
    ns = _in_process(program.replace("found = patch.find(modern)", "found = patch.find('no')"), picture, _YesNoToolbox())
    assert ns["final_answer"] == ["traditional", "no", True, True, "NO", "no"]
    from hydra_vr.api.types import Reply

    assert not Reply("No.") and not Reply(" ") and Reply("yes") and Reply("north") and Reply("0")


def test_a_program_looping_over_tools_is_stopped_at_the_call_limit(fake: FakeToolbox, picture: str) -> None:
    # "while not bald_man:" with a test that never holds: the sandbox's tool-call limit ends it
    program = ("bald = None\nwhile not bald:\n"
               "    for p in ImagePatch(image).find('person'):\n"
               "        if p.simple_query('Is the person bald?') == 'yes':\n            bald = p")
    with Sandbox(fake, timeout_s=5.0, memory_mb=256, max_tool_calls=30) as sb:
        res = sb.run(program, picture)
        assert not res.ok and "too many vision tool calls in one step (limit 30)" in res.error
        assert sb.run("final_answer = len(ImagePatch(image).find('cup'))", picture).final_answer == 2  # the next step works
