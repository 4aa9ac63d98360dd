"""The sandbox child: imports everything, locks itself down, then runs program steps on request.

Started by :class:`hydra_vr.sandbox.session.Sandbox` as a fresh interpreter (``python -I``, empty
environment, temp working directory, own session). Messages (see ``wire``):
parent -> child: ``("image", key, mode, w, h, bytes)``, ``("run", code, image_key, cpu_s, max_tool_calls)``,
``("reset",)``, ``("exit",)``; child -> parent: ``("ready", info)``, ``("tool", op, args)``,
``("result", dict)``, ``("reset_done",)``.
"""

from __future__ import annotations

import gc
import importlib
import os
import time
import warnings
from multiprocessing.connection import Connection
from typing import Any

from PIL import Image

from hydra_vr.api.helpers import API_FUNCTIONS
from hydra_vr.api.image_patch import ImagePatch
from hydra_vr.sandbox.limits import apply_child_limits, set_step_cpu_limit
from hydra_vr.sandbox.policy import DEFAULT_ALLOWED_MODULES, RuntimePolicy, compile_program
from hydra_vr.sandbox.proxy import IMAGE_ATTRIBUTES, KEY_ATTR, PATCH_ATTRIBUTES, ProxyToolbox, make_patch_class
from hydra_vr.sandbox.report import (
    MAX_VARIABLES,
    describe,
    describe_exception,
    fingerprint,
    is_reported,
    to_plain,
)
from hydra_vr.sandbox.wire import recv_trusted, send

_WARM_UP_PROGRAM = """
import math
xs = [i * i for i in range(5) if i % 2]
d = {k: v for k, v in zip("ab", xs)}
a, b = xs
t = 0
for i, v in enumerate(xs):
    t += v
s = f"{t:.2f} {sorted(xs)} {math.sqrt(4)}"
print(s)
final_answer = max(xs)
"""


class Worker:
    """One episode namespace plus the machinery to run steps in it."""

    def __init__(self, conn: Connection, settings: dict[str, Any]) -> None:
        self.conn = conn
        self.memory_mb = int(settings.get("memory_mb", 1024))
        self.allowed_modules = frozenset(settings.get("allowed_modules", DEFAULT_ALLOWED_MODULES))
        self.policy = RuntimePolicy(
            allowed_modules=self.allowed_modules,
            attribute_allowlists={Image.Image: IMAGE_ATTRIBUTES, ImagePatch: PATCH_ATTRIBUTES},
            max_stdout_chars=int(settings.get("max_stdout_chars", 4000)),
        )
        self.proxy = ProxyToolbox(conn)
        self.api: dict[str, Any] = {"ImagePatch": make_patch_class(self.proxy, self.policy.refuse)}
        self.api.update({f.__name__: f for f in API_FUNCTIONS})
        self.reserved = frozenset(self.api)
        self.hidden = frozenset(self.policy.guard_globals()) | self.reserved | {"image", "_print"}
        self.images: dict[str, Image.Image] = {}
        self.namespace: dict[str, Any] = {}
        self.seen: dict[str, tuple[int, str]] = {}

    # ------------------------------------------------------------------ set-up
    def warm_up(self) -> None:
        """Import the allowed modules, run a program and touch PIL once: after the lock-down no
        file can be opened, so no lazy import may be left."""
        for name in sorted(self.allowed_modules):
            importlib.import_module(name)
        img = Image.new("RGB", (8, 8))
        img.crop((0, 0, 4, 4)).convert("L").resize((2, 2)).rotate(90).tobytes()
        Image.frombytes("RGB", (2, 2), bytes(12))
        self._run_step(_WARM_UP_PROGRAM, None, cpu_s=None, max_tool_calls=0)
        self.reset()

    def reset(self) -> None:
        self.namespace.clear()
        self.seen.clear()
        gc.collect()

    # ------------------------------------------------------------------- steps
    def _run_step(self, code: str, image_key: str | None, cpu_s: float | None, max_tool_calls: int) -> dict[str, Any]:
        t0 = time.perf_counter()
        compiled = compile_program(code, allowed_modules=self.allowed_modules, reserved_names=self.reserved)
        t_compiled = time.perf_counter()
        result: dict[str, Any] = {"ok": False, "compile_ms": (t_compiled - t0) * 1000}
        if compiled.code is None:
            result.update(error_kind=compiled.error_kind, error=compiled.error, line=compiled.line, rule=compiled.rule)
            return result

        ns = self.namespace
        ns.update(self.policy.guard_globals())
        ns.update(self.api)
        ns["image"] = self.images.get(image_key) if image_key else None
        self.policy.new_step()
        self.proxy.calls, self.proxy.max_calls = 0, max_tool_calls
        if cpu_s is not None:
            set_step_cpu_limit(cpu_s)
        error: BaseException | None = None
        try:
            exec(compiled.code, ns)
        except BaseException as exc:  # SystemExit, KeyboardInterrupt, PolicyError... all end the step
            error = exc
        t_run = time.perf_counter()

        if self.policy.violations:
            rule, line = self.policy.violations[0]
            where = f" (line {line})" if line else ""
            result.update(error_kind="policy", error=f"{rule}{where}", rule=rule, line=line)
        elif error is not None:
            message, line = describe_exception(error, code.splitlines())
            kind = "memory" if isinstance(error, MemoryError) else "runtime"
            if kind == "memory":
                message += f" (the program exceeded its {self.memory_mb} MB memory limit)"
            result.update(error_kind=kind, error=message, line=line)
        else:
            result["ok"] = True
        if error is not None:
            error.__traceback__ = None  # drop the frames (and what they hold) now
            error = None
        result.update(self._report())
        result["stdout"] = self.policy.stdout.getvalue()
        result["tool_calls"] = self.proxy.calls
        result["execute_ms"] = (t_run - t_compiled) * 1000
        result["report_ms"] = (time.perf_counter() - t_run) * 1000
        return result

    def _report(self) -> dict[str, Any]:
        variables = []
        current: dict[str, tuple[int, str]] = {}
        for name, value in list(self.namespace.items()):
            if name.startswith("_") or name in self.hidden or not is_reported(value):
                continue
            fp = fingerprint(value)
            current[name] = fp
            if self.seen.get(name) != fp and len(variables) < MAX_VARIABLES:
                variables.append(describe(name, value))
        deleted = sorted(set(self.seen) - set(current))
        self.seen = current
        out: dict[str, Any] = {"variables": variables, "deleted": deleted}
        if "final_answer" in self.namespace:
            out["has_final_answer"] = True
            out["final_answer"] = to_plain(self.namespace["final_answer"])
        return out

    # ------------------------------------------------------------------- loop
    def handle(self, message: tuple[Any, ...]) -> bool:
        """Serve one parent message; False when the child should exit."""
        kind = message[0]
        if kind == "run":
            _, code, image_key, cpu_s, max_tool_calls = message
            try:
                result = self._run_step(code, image_key, cpu_s, max_tool_calls)
            except MemoryError:
                self.namespace.pop("final_answer", None)
                result = {"ok": False, "error_kind": "memory",
                          "error": f"MemoryError while reporting the step (limit {self.memory_mb} MB)"}
            send(self.conn, ("result", result))
        elif kind == "image":
            _, key, mode, width, height, data = message
            img = Image.frombytes(mode, (width, height), data)
            setattr(img, KEY_ATTR, key)
            self.images = {key: img}  # one episode image at a time
        elif kind == "reset":
            self.reset()
            send(self.conn, ("reset_done",))
        elif kind == "exit":
            return False
        return True


def main(fd: int, settings: dict[str, Any]) -> None:
    """Child entry point (see session.BOOTSTRAP)."""
    warnings.simplefilter("ignore")
    conn = Connection(fd)
    worker = Worker(conn, settings)
    worker.warm_up()
    os.environ.clear()
    limits = apply_child_limits(worker.memory_mb, drop_root=bool(settings.get("drop_root", True)))
    send(conn, ("ready", {"pid": os.getpid(), "limits": limits}))
    while True:
        try:
            message = recv_trusted(conn)
        except EOFError:  # the parent went away
            break
        if not worker.handle(message):
            break
    os._exit(0)  # skip interpreter teardown: finalizers of program objects must not run
