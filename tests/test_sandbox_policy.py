"""Sandbox: hostile programs are refused or contained with the right error kind, and the parent
(and the next program) keeps working. Files attacks aim at must not appear."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from hydra_vr.api.types import Box, Detection
from hydra_vr.sandbox import ProgramResult, Sandbox


class FindOnly:
    """A toolbox double with one operation (enough to see monkeypatching attempts fail)."""

    def find(self, image: Image.Image, name: str, presumed: bool = False) -> list[Detection]:
        return [Detection(Box(1, 2, 11, 12), name, 0.5, "fake")]


ORIGINAL_FIND = FindOnly.find
TARGET = "{target}"  # replaced by a path under the test's tmp_path

# (id, program, expected error kind). Every attack on files aims at TARGET.
ATTACKS: list[tuple[str, str, str]] = [
    # imports
    ("import_os", "import os\nos.system('touch {target}')", "policy"),
    ("import_subprocess", "import subprocess\nsubprocess.run(['touch', '{target}'])", "policy"),
    ("import_socket", "import socket\nsocket.create_connection(('example.com', 80))", "policy"),
    ("import_ctypes", "import ctypes\nctypes.CDLL(None).system(b'touch {target}')", "policy"),
    ("import_importlib", "import importlib\nos = importlib.import_module('os')", "policy"),
    ("from_os_import", "from os import system\nsystem('touch {target}')", "policy"),
    ("dunder_import", "os = __import__('os')", "policy"),
    ("relative_import", "from . import session", "policy"),
    ("submodule_of_allowed", "import collections.abc", "policy"),
    ("module_through_allowed_module", "import re\nsys = re.enum.sys\nsys.modules['os'].system('touch {target}')", "policy"),
    ("from_allowed_import_module", "from statistics import sys", "policy"),
    # introspection escapes
    ("subclasses", "classes = ().__class__.__bases__[0].__subclasses__()", "policy"),
    ("getattr_dunder", "cls = getattr((), '__class__')", "policy"),
    ("function_globals", "g = bool_to_yesno.__globals__", "policy"),
    ("getattr_globals", "g = getattr(bool_to_yesno, '__glo' + 'bals__')", "policy"),
    ("generator_frame", "g = (i for i in [1])\nf = g.gi_frame.f_back.f_globals", "policy"),
    ("getattr_generator_frame", "g = (i for i in [1])\nf = getattr(g, 'gi_' + 'frame')", "policy"),
    ("traceback_frame", "try:\n    1 / 0\nexcept Exception as e:\n    tb = e.__traceback__", "policy"),
    ("str_format_fields", "leak = '{0.__class__.__mro__}'.format(1)", "policy"),
    ("str_format_unbound", "leak = str.format('{0.__class__}', 1)", "policy"),
    ("builtins_name", "b = __builtins__", "policy"),
    ("guard_rebinding", "def f(_getattr_):\n    return _getattr_", "policy"),
    ("type_builtin", "t = type(1)", "policy"),
    ("class_definition", "class Evil:\n    pass", "policy"),
    # dangerous builtins
    ("open_read", "secret = open('/etc/passwd').read()", "policy"),
    ("open_write", "open('{target}', 'w').write('pwned')", "policy"),
    ("exec", "exec('import os')", "policy"),
    ("eval", "x = eval('1 + 1')", "policy"),
    ("compile", "c = compile('1', 'f', 'exec')", "policy"),
    ("globals", "g = globals()", "policy"),
    ("vars", "v = vars()", "policy"),
    ("locals", "l = locals()", "policy"),
    ("dir", "d = dir(image)", "policy"),
    ("breakpoint", "breakpoint()", "policy"),
    # environment
    ("environ", "import os\nsecret = os.environ", "policy"),
    ("getenv_via_module_chain", "import statistics\nenv = statistics.random.os.environ", "policy"),
    # files through the image objects
    ("image_save", "image.save('{target}')", "policy"),
    ("crop_save", "ImagePatch(image).cropped_image.save('{target}')", "policy"),
    ("image_core", "core = image.im", "policy"),
    ("image_show", "image.show()", "policy"),
    ("patch_from_path", "p = ImagePatch('/etc/passwd')", "policy"),
    ("patch_toolbox", "tb = ImagePatch(image)._toolbox", "policy"),
    ("getattr_patch_toolbox", "tb = getattr(ImagePatch(image), '_tool' + 'box')", "policy"),
    ("print_to_file", "print('x', file=image)", "policy"),
    # monkeypatching the API
    ("patch_class_method", "ImagePatch.find = lambda self, name: []", "policy"),
    ("patch_instance_method", "p = ImagePatch(image)\np.find = None", "policy"),
    ("setattr_class", "setattr(ImagePatch, 'find', None)", "policy"),
    ("rebind_api_class", "ImagePatch = None", "policy"),
    ("rebind_helper", "def bool_to_yesno(x):\n    return 'yes'", "policy"),
    ("delete_api_name", "del ImagePatch", "policy"),
    ("item_write_on_object", "image[0] = 1", "policy"),
    # escaping through exceptions: a refusal the program swallows is still a refusal
    ("swallowed_refusal", "try:\n    getattr(1, '__class__')\nexcept Exception:\n    pass\nfinal_answer = 'escaped'", "policy"),
    ("swallowed_bare_except", "try:\n    getattr(1, '__class__')\nexcept:\n    pass", "policy"),
    # resources
    ("infinite_loop", "while True:\n    pass", "timeout"),
    ("loop_catching_everything", "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass", "timeout"),
    ("catastrophic_regex", "import re\nre.match('(a+)+$', 'a' * 64 + 'b')", "timeout"),
    ("huge_range_sum", "s = sum(range(10 ** 15))", "timeout"),
    ("memory_bomb_string", "x = 'a' * (10 ** 10)", "memory"),
    ("memory_bomb_list", "x = [0] * (10 ** 9)", "memory"),
    ("memory_bomb_growing", "chunks = []\nwhile True:\n    chunks.append(' ' * 10 ** 6)", "memory"),
    ("memory_bomb_image", "big = image.resize((60000, 60000))", "memory"),
    ("deep_recursion", "def f(n):\n    return f(n + 1)\nf(0)", "runtime"),
    ("fork_bomb", "import os\nwhile True:\n    os.fork()", "policy"),
    ("threads", "import threading\nthreading.Thread(target=lambda: None).start()", "policy"),
    ("multiprocessing", "import multiprocessing\nmultiprocessing.Process(target=print).start()", "policy"),
    ("tool_call_flood", "for i in range(100000):\n    ImagePatch(image).find('cup')", "runtime"),
    ("uncaught_stop_iteration", "x = next(iter([]))", "runtime"),
    ("huge_exception_message", "raise ValueError('z' * 10 ** 7)", "runtime"),
]


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(FindOnly(), timeout_s=0.5, memory_mb=200, cpu_s=5) as sb:
        sb.wait_ready()
        yield sb


@pytest.fixture(scope="module")
def picture(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("attacks") / "picture.png"
    Image.new("RGB", (64, 48), (200, 30, 30)).save(path)
    return str(path)


def still_works(sb: Sandbox, picture: str) -> ProgramResult:
    """A new episode after the attack: the child (maybe a new one) runs the real API normally."""
    sb.reset()
    res = sb.run("boxes = [p.box for p in ImagePatch(image).find('cup')]\nfinal_answer = bool_to_yesno(len(boxes) == 1)", picture)
    assert res.ok, res.error
    assert res.final_answer == "yes" and res.variable("boxes").repr == "[[1.0, 2.0, 11.0, 12.0]]"
    return res


def test_there_are_enough_attacks() -> None:
    assert len(ATTACKS) >= 30
    assert {kind for _, _, kind in ATTACKS} == {"policy", "timeout", "memory", "runtime"}


@pytest.mark.parametrize("code,kind", [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
def test_attack_is_refused_or_contained(sandbox: Sandbox, picture: str, tmp_path: Path, code: str, kind: str) -> None:
    target = tmp_path / "pwned"
    env_before, cwd_before = dict(os.environ), os.getcwd()
    sandbox.reset()
    # A memory attack must be stopped by the memory limit, not the clock: right after a test that freed a
    # model, this VM can take longer than the fixture's 0.5 s to fault in the bomb's first 200 MB.
    res = sandbox.run(code.replace(TARGET, str(target)), picture, timeout_s=5.0 if kind == "memory" else None)
    assert (res.ok, res.error_kind) == (False, kind), res.error
    assert res.error and len(res.error) < 1000  # short enough to feed back to the LLM
    if kind == "policy":
        assert res.rule
    assert not target.exists()
    assert dict(os.environ) == env_before and os.getcwd() == cwd_before
    assert FindOnly.find is ORIGINAL_FIND
    still_works(sandbox, picture)


def test_policy_errors_name_the_rule_and_line(sandbox: Sandbox) -> None:
    sandbox.reset()
    res = sandbox.run("x = 1\ny = 2\nimport os")
    assert res.error_kind == "policy" and res.line == 3 and '"os"' in res.rule
    res = sandbox.run("x = 1\nc = getattr(x, '__class__')")
    assert res.error_kind == "policy" and res.line == 2 and "__class__" in res.error


def test_huge_outputs_are_capped(sandbox: Sandbox, picture: str) -> None:
    sandbox.reset()
    res = sandbox.run("for i in range(200000):\n    print(i)\nprint('x' * 10 ** 7)\nfinal_answer = 'y' * 10 ** 7\nbig = 'z' * 10 ** 7")
    assert res.ok, res.error
    assert len(res.stdout) < 5000 and "more characters not shown" in res.stdout
    assert len(res.final_answer) < 10_100
    assert len(res.variable("big").repr) <= 200
    still_works(sandbox, picture)


def test_deeply_nested_values_are_reported_safely(sandbox: Sandbox, picture: str) -> None:
    sandbox.reset()
    res = sandbox.run("a = []\nfor i in range(100000):\n    a = [a]\nfinal_answer = a")
    assert res.ok, res.error
    assert len(res.variable("a").repr) <= 200
    still_works(sandbox, picture)


def test_generator_finalizer_cannot_hang_the_next_episode(sandbox: Sandbox, picture: str) -> None:
    sandbox.reset()
    restarts = sandbox.restarts
    trap = "def g():\n    try:\n        yield 1\n    finally:\n        while True:\n            pass\nit = g()\nfirst = next(it)"
    assert sandbox.run(trap).ok
    sandbox.reset()  # clearing the namespace runs the finally: the child is replaced
    assert sandbox.restarts == restarts + 1
    still_works(sandbox, picture)


def test_monkeypatching_does_not_reach_later_programs(sandbox: Sandbox, picture: str) -> None:
    sandbox.reset()
    refused = sandbox.run("ImagePatch.find = lambda self, name: []\nbool_to_yesno = len", picture)
    assert refused.error_kind == "policy"
    # Same episode, even: the API is intact.
    res = sandbox.run("final_answer = [len(ImagePatch(image).find('cup')), bool_to_yesno(True)]", picture)
    assert res.ok and res.final_answer == [1, "yes"]


def test_nothing_is_written_outside_the_sandbox(sandbox: Sandbox, picture: str, tmp_path: Path) -> None:
    cwd_before = set(os.listdir(os.getcwd()))
    workdir_before = set(os.listdir(sandbox.workdir))
    for name, code, _ in ATTACKS:
        if "{target}" in code:
            sandbox.reset()
            sandbox.run(code.replace(TARGET, str(tmp_path / name)), picture)
    assert os.listdir(tmp_path) == []
    assert set(os.listdir(os.getcwd())) == cwd_before
    # The sandbox directory holds only the children's stderr logs.
    assert all(n.startswith("child-") and n.endswith(".stderr") for n in set(os.listdir(sandbox.workdir)) - workdir_before)


def test_child_cannot_fork_or_open_files_even_past_the_policy(sandbox: Sandbox) -> None:
    # The OS limits behind the policy: nothing may be opened, no process or thread started.
    limits = sandbox.limits
    assert limits["nofile"] == "0" and limits["nproc"] == "0"
    assert limits["user"].startswith(("uid 65534", "kept uid"))
    if os.geteuid() == 0:
        assert limits["user"] == "uid 65534 (nobody)"


def test_cpu_limit_stops_a_busy_child(picture: str) -> None:
    with Sandbox(FindOnly(), timeout_s=30, cpu_s=1) as sb:
        res = sb.run("while True:\n    pass")
        assert res.error_kind == "timeout" and "CPU" in res.error and res.namespace_lost
        assert res.timings.total < 10_000
        still_works(sb, picture)


LOCKED_DOWN_PROBE = """
import os, socket, threading
from hydra_vr.sandbox.limits import apply_child_limits
apply_child_limits(100)
def attempt(f):
    try:
        f()
        return "allowed"
    except BaseException as exc:
        return type(exc).__name__
print(attempt(lambda: open(TARGET, "w")))
print(attempt(lambda: open("/etc/hostname")))
print(attempt(socket.socket))
print(attempt(lambda: bytearray(300 * 1024 * 1024)))
print(attempt(lambda: threading.Thread(target=print).start()))
print(attempt(os.fork))
"""


def test_os_limits_hold_without_the_policy(tmp_path: Path) -> None:
    # The second wall on its own: plain Python (no RestrictedPython) after apply_child_limits.
    target = tmp_path / "pwned"
    probe = f"TARGET = {str(target)!r}\n" + LOCKED_DOWN_PROBE
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    lines = out.stdout.split()
    assert lines[:3] == ["OSError", "OSError", "OSError"], out.stderr  # EMFILE: no new descriptors
    assert lines[3] == "MemoryError"
    assert lines[4] == "RuntimeError" and lines[5] in ("BlockingIOError", "OSError")  # no thread, no fork
    assert not target.exists()
