"""The parent side: a Sandbox owns one child process per episode and runs program steps in it.

The child is a fresh interpreter started with ``subprocess`` (``python -I -B``: no inherited
environment, no user site, no fork of a parent that holds models or threads), in its own session
and a private temp directory. It keeps the episode namespace between steps. Vision calls come back
over the socket and are answered here from the parent's toolbox, so models are loaded only once,
in the parent. A step that runs past its time is killed with its whole process group; a new child
is started at once (the episode's variables are lost, and the result says so).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PIL import Image

from hydra_vr.api.image_patch import load_image
from hydra_vr.config import SandboxConfig
from hydra_vr.sandbox.policy import DEFAULT_ALLOWED_MODULES
from hydra_vr.sandbox.results import ERROR_KINDS, ProgramResult, StepTimings, VariableInfo
from hydra_vr.sandbox.tool_server import ToolServer
from hydra_vr.sandbox.wire import MessageError, recv_untrusted, send

if TYPE_CHECKING:
    from hydra_vr.api.toolbox import VisionToolbox

BOOTSTRAP = (
    "import sys, json\n"
    "cfg = json.loads(sys.argv[2])\n"
    "sys.path[:0] = cfg.pop('sys_path')\n"
    "from hydra_vr.sandbox.worker import main\n"
    "main(int(sys.argv[1]), cfg)\n"
)
# Single-threaded maths libraries: the child may not start threads once locked down.
_CHILD_ENV = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
_STDERR_TAIL = 600


class SandboxError(RuntimeError):
    """The sandbox itself failed (the child could not start); not an error of the program."""


@dataclass
class _Child:
    proc: subprocess.Popen[bytes]
    conn: Connection
    log_path: Path
    started: float
    ready: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    image_key: str | None = None

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the whole session, whatever it started
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.kill()
        except OSError:
            pass
        self.proc.wait()
        self.conn.close()

    def stderr_tail(self) -> str:
        try:
            data = self.log_path.read_bytes()[-_STDERR_TAIL:]
        except OSError:
            return ""
        return data.decode("utf-8", "replace").strip()


class _Resources:
    """What must be released when the Sandbox goes away (kept apart so a finalizer can hold it)."""

    def __init__(self) -> None:
        self.child: _Child | None = None
        self.tmpdir = Path(tempfile.mkdtemp(prefix="hydra-sandbox-"))

    def stop_child(self, graceful: bool = False) -> None:
        child, self.child = self.child, None
        if child is None:
            return
        if graceful and child.proc.poll() is None:
            try:
                send(child.conn, ("exit",))
                child.proc.wait(timeout=1.0)
            except (OSError, subprocess.TimeoutExpired):
                pass
        child.kill()

    def close(self) -> None:
        self.stop_child(graceful=True)
        shutil.rmtree(self.tmpdir, ignore_errors=True)


class Sandbox:
    """Runs untrusted programs step by step in one child process that keeps their namespace.

    ``timeout_s`` bounds each step's own wall-clock time (time the parent spends in vision tools
    does not count; ``max_tool_s`` bounds that separately); ``memory_mb`` is the address space
    the program may add to the child's baseline; ``cpu_s`` the CPU seconds per step.
    Use one Sandbox per episode, or call :meth:`reset` between episodes. Not thread-safe for
    concurrent steps: calls are serialised by a lock.
    """

    def __init__(
        self,
        toolbox: VisionToolbox | None = None,
        *,
        config: SandboxConfig | None = None,
        timeout_s: float | None = None,
        memory_mb: int | None = None,
        cpu_s: float | None = None,
        max_tool_calls: int | None = None,
        max_tool_s: float | None = None,
        max_stdout_chars: int = 4000,
        allowed_modules: frozenset[str] = DEFAULT_ALLOWED_MODULES,
        boot_timeout_s: float = 60.0,
        drop_root: bool = True,
    ) -> None:
        self.toolbox = toolbox
        self.timeout_s = float(timeout_s if timeout_s is not None else (config.timeout_s if config else 10.0))
        self.memory_mb = int(memory_mb if memory_mb is not None else (config.memory_mb if config else 1024))
        self.cpu_s = float(cpu_s if cpu_s is not None else (config.cpu_s if config else 20.0))
        defaults = config or SandboxConfig()
        self.max_tool_calls = int(max_tool_calls if max_tool_calls is not None else defaults.max_tool_calls)
        self.max_tool_s = float(max_tool_s if max_tool_s is not None else defaults.max_tool_s)
        self.boot_timeout_s = boot_timeout_s
        self._settings = {
            "memory_mb": self.memory_mb,
            "allowed_modules": sorted(allowed_modules),
            "max_stdout_chars": max_stdout_chars,
            "drop_root": drop_root,
        }
        self._res = _Resources()
        self._finalizer = weakref.finalize(self, self._res.close)
        self._lock = threading.RLock()
        self._server = ToolServer()
        self._image: _EpisodeImage | None = None
        self._image_counter = 0
        self._spawn_count = 0
        self.restarts = 0  # children killed or lost after a timeout or crash

    # ------------------------------------------------------------ lifecycle
    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the child and remove the temp directory (also done at garbage collection/exit)."""
        with self._lock:
            self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    @property
    def pid(self) -> int | None:
        child = self._res.child
        return child.proc.pid if child is not None else None

    @property
    def limits(self) -> dict[str, str]:
        """The OS limits the current child applied (after it is ready), for logs and reports."""
        child = self._res.child
        return dict(child.info.get("limits", {})) if child is not None else {}

    @property
    def workdir(self) -> Path:
        return self._res.tmpdir

    def start(self) -> None:
        """Start the child now (it boots in the background); run() starts one when needed."""
        with self._lock:
            self._check_open()
            if self._res.child is None:
                self._spawn()

    def wait_ready(self) -> float:
        """Block until the child is ready; returns the seconds waited."""
        with self._lock:
            self._check_open()
            return self._ready_child()[1]

    def reset(self, *, fresh_process: bool = False) -> None:
        """Start a new episode: empty namespace (and, with ``fresh_process``, a new child)."""
        with self._lock:
            self._check_open()
            child = self._res.child
            if child is None:
                return
            if fresh_process or child.proc.poll() is not None:
                self._replace_child(count_restart=False)
                return
            if not child.ready:
                return  # a booting child has an empty namespace already
            try:
                send(child.conn, ("reset",))
                # Finalizers of program objects (a generator's ``finally``) run now: bound them.
                if child.conn.poll(2.0) and recv_untrusted(child.conn) == ("reset_done",):
                    return
            except (OSError, EOFError, MessageError):
                pass
            self._replace_child(count_restart=True)

    # ------------------------------------------------------------------ run
    def run(
        self,
        code: str,
        image_path: str | Path | Image.Image | None = None,
        *,
        timeout_s: float | None = None,
        toolbox: VisionToolbox | None = None,
        fresh: bool = False,
    ) -> ProgramResult:
        """Run one step of the episode. ``image_path`` (or a PIL image) is what the program sees
        as ``image``; ``toolbox`` overrides the sandbox's toolbox for this step; ``fresh`` starts
        a new episode first (as :meth:`reset`)."""
        with self._lock:
            self._check_open()
            if fresh:
                self.reset()
            timeout = self.timeout_s if timeout_s is None else float(timeout_s)
            tools = toolbox if toolbox is not None else self.toolbox
            image = self._episode_image(image_path) if image_path is not None else None
            t0 = time.perf_counter()
            child, waited = self._ready_child()
            if image is not None:  # kept for later steps: their patches still refer to it
                self._server.images = {image.key: image.image}
            result = self._exchange(child, code, image, timeout, tools)
            result.timings.spawn = waited * 1000
            result.timings.total = (time.perf_counter() - t0) * 1000
            return result

    def _serve(self, tools: Any, op: str, args: Any, calls: list[Any]) -> Any:
        """Answer one proxied call; what the toolbox records of it goes to this step's ``calls``."""
        recording = getattr(tools, "recording", None)
        if recording is None:  # a toolbox without a call log (test fakes)
            return self._server.answer(tools, op, args)
        with recording() as made:
            reply = self._server.answer(tools, op, args)
        calls.extend(made)
        return reply

    def _exchange(
        self, child: _Child, code: str, image: _EpisodeImage | None, timeout: float, tools: Any
    ) -> ProgramResult:
        tool_s = 0.0
        tool_calls = 0
        calls: list[Any] = []  # this step's tool-call records, returned with its result
        try:
            if image is not None and child.image_key != image.key:
                img = image.image  # sent once per episode image; tool calls then refer to it by key
                send(child.conn, ("image", image.key, img.mode, img.width, img.height, img.tobytes()))
                child.image_key = image.key
            t_start = time.perf_counter()
            send(child.conn, ("run", code, image.key if image else None, self.cpu_s, self.max_tool_calls))
            while True:
                remaining = timeout - (time.perf_counter() - t_start - tool_s)
                if remaining <= 0:
                    return self._lost("timeout", f"the program ran longer than {timeout:g} s and was stopped")
                if not child.conn.poll(remaining):
                    continue  # the clock is checked again above
                message = recv_untrusted(child.conn)
                if not isinstance(message, tuple) or not message:
                    raise _ProtocolError("malformed message")
                if message[0] == "tool" and len(message) == 3:
                    t_tool = time.perf_counter()
                    reply = self._serve(tools, message[1], message[2], calls)
                    _send_reply(child.conn, reply)
                    tool_s += time.perf_counter() - t_tool
                    tool_calls += 1
                    if tool_s > self.max_tool_s:
                        return self._lost("timeout", f"vision tools took more than {self.max_tool_s:g} s in one step")
                elif message[0] == "result" and len(message) == 2:
                    result = _result_from_child(message[1])
                    result.tool_calls = tool_calls
                    result.calls = calls
                    result.timings.tools = tool_s * 1000
                    return result
                else:
                    raise _ProtocolError(f"unexpected message {str(message[0])[:40]!r}")
        except (EOFError, OSError, MessageError, _ProtocolError) as exc:
            return self._died(child, exc)
        except BaseException:
            # Interrupted here (Ctrl-C, a toolbox that raised past Exception): the child may still
            # be mid-step, and its late messages would confuse the next step. Replace it.
            self._replace_child(count_restart=True)
            raise

    # ------------------------------------------------------------ children
    def _check_open(self) -> None:
        if self.closed:
            raise SandboxError("this sandbox is closed")

    def _spawn(self) -> _Child:
        parent_end, child_end = Pipe(duplex=True)
        self._spawn_count += 1
        log_path = self._res.tmpdir / f"child-{self._spawn_count}.stderr"
        settings = dict(self._settings, sys_path=[os.path.abspath(p) if p else os.getcwd() for p in sys.path])
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-B", "-c", BOOTSTRAP, str(child_end.fileno()), json.dumps(settings)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                pass_fds=(child_end.fileno(),),
                cwd=self._res.tmpdir,
                env=_CHILD_ENV,
                start_new_session=True,
            )
        child_end.close()
        child = _Child(proc, parent_end, log_path, time.perf_counter())
        self._res.child = child
        return child

    def _ready_child(self) -> tuple[_Child, float]:
        child = self._res.child
        if child is not None and child.proc.poll() is not None:
            self._res.stop_child()
            child = None
        if child is None:
            child = self._spawn()
        if child.ready:
            return child, 0.0
        t0 = time.perf_counter()
        try:
            if not child.conn.poll(self.boot_timeout_s):
                raise SandboxError(f"sandbox child not ready after {self.boot_timeout_s:g} s")
            message = recv_untrusted(child.conn)
            if not (isinstance(message, tuple) and message[0] == "ready" and isinstance(message[1], dict)):
                raise SandboxError("sandbox child sent an unexpected first message")
        except (EOFError, OSError, MessageError, SandboxError) as exc:
            tail = child.stderr_tail()
            self._res.stop_child()
            raise SandboxError(f"sandbox child failed to start: {exc}\n{tail}".strip()) from exc
        child.ready, child.info = True, message[1]
        return child, time.perf_counter() - t0

    def _replace_child(self, *, count_restart: bool) -> None:
        self._res.stop_child()
        if count_restart:
            self.restarts += 1
        self._spawn()  # boots in the background while the caller carries on

    def _lost(self, kind: str, message: str) -> ProgramResult:
        self._replace_child(count_restart=True)
        return ProgramResult(
            ok=False, error_kind=kind, error=message + "; variables from earlier steps were lost", namespace_lost=True  # type: ignore[arg-type]
        )

    def _died(self, child: _Child, exc: BaseException) -> ProgramResult:
        try:
            rc = child.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            rc = None  # alive but misbehaving: killed below
        tail = child.stderr_tail().splitlines()[-1:] if rc not in (None, 0) else []
        if rc == -signal.SIGXCPU:
            return self._lost("timeout", f"the program used more than {self.cpu_s:g} s of CPU and was stopped")
        if rc is None:
            reason = f"sandbox protocol error ({exc})"
        elif rc < 0:
            reason = f"the program's process was killed by {signal.Signals(-rc).name}"
            if rc == -signal.SIGKILL:
                reason += " (possibly out of memory)"
        else:
            reason = f"the program's process exited with status {rc}"
        return self._lost("crash", reason + (f" [{tail[0][:200]}]" if tail else ""))

    # --------------------------------------------------------------- images
    def _episode_image(self, source: str | Path | Image.Image) -> _EpisodeImage:
        """The parent's copy of the image, loaded once per source (path + mtime, or object)."""
        if isinstance(source, Image.Image):
            source_id: tuple[Any, ...] = ("object", id(source))
        else:
            path = Path(source)
            try:
                st = path.stat()
                source_id = ("path", str(path.resolve()), st.st_mtime_ns, st.st_size)
            except OSError:
                source_id = ("path", str(path))
        if self._image is not None and self._image.source_id == source_id:
            return self._image
        img = load_image(source)  # raises ImageLoadError for a bad path: the caller's mistake
        self._image_counter += 1
        # The source object is kept so its id() cannot be reused by another image meanwhile.
        self._image = _EpisodeImage(source_id, f"img{self._image_counter}", img, source)
        return self._image


@dataclass
class _EpisodeImage:
    source_id: tuple[Any, ...]
    key: str
    image: Image.Image
    source: Any


class _ProtocolError(Exception):
    pass


def _send_reply(conn: Connection, reply: tuple[Any, ...]) -> None:
    try:
        send(conn, reply)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:  # a tool returned something odd
        send(conn, ("tool_err", "RuntimeError", f"tool result could not be sent: {exc}"[:300]))


def _floats(value: Any) -> list[float] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 4:
        raise _ProtocolError("bad box")
    return [float(v) for v in value]


def _result_from_child(data: Any) -> ProgramResult:
    """Build a ProgramResult from the child's plain-data report, checking every field."""
    try:
        if not isinstance(data, dict):
            raise _ProtocolError("result is not a dict")
        kind = data.get("error_kind")
        if kind is not None and kind not in ERROR_KINDS:
            raise _ProtocolError(f"unknown error kind {kind!r}")
        variables = [
            VariableInfo(
                name=str(v["name"]),
                type=str(v["type"]),
                repr=str(v["repr"]),
                box=_floats(v.get("box")),
                boxes=None if v.get("boxes") is None else [_floats(b) or [] for b in v["boxes"]],
            )
            for v in data.get("variables", [])
        ]
        line = data.get("line")
        return ProgramResult(
            ok=bool(data.get("ok")) and kind is None,
            error_kind=kind,
            error=None if data.get("error") is None else str(data["error"]),
            final_answer=data.get("final_answer"),
            has_final_answer=bool(data.get("has_final_answer", False)),
            variables=variables,
            deleted=[str(n) for n in data.get("deleted", [])],
            stdout=str(data.get("stdout", "")),
            line=line if isinstance(line, int) else None,
            rule=None if data.get("rule") is None else str(data["rule"]),
            timings=StepTimings(
                compile=float(data.get("compile_ms", 0.0)),
                execute=float(data.get("execute_ms", 0.0)),
                report=float(data.get("report_ms", 0.0)),
            ),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise _ProtocolError(f"bad result: {exc}") from exc
