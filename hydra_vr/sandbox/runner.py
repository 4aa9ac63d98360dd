"""``run_program``: the one-shot entry point, on a lazily created sandbox shared by its callers."""

from __future__ import annotations

import atexit
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from PIL import Image

from hydra_vr.sandbox.results import ProgramResult
from hydra_vr.sandbox.session import Sandbox

if TYPE_CHECKING:
    from hydra_vr.api.toolbox import VisionToolbox

_shared: Sandbox | None = None
_shared_lock = threading.Lock()


def _shared_sandbox() -> Sandbox:
    # Created on first use (never at import) and closed at interpreter exit.
    global _shared
    with _shared_lock:
        if _shared is None or _shared.closed:
            _shared = Sandbox()
            atexit.register(_shared.close)
        return _shared


def run_program(
    code: str,
    image_path: str | Path | Image.Image | None = None,
    timeout_s: float = 10.0,
    toolbox: VisionToolbox | None = None,
    namespace_session: Sandbox | None = None,
) -> ProgramResult:
    """Run ``code`` in a sandbox and return a structured result.

    The program sees the image as ``image`` (and may build ``ImagePatch(image)``), the ImagePatch
    API and its helper functions. ``toolbox`` answers the vision calls (none: they fail with
    "no vision tools configured"). With ``namespace_session`` the step runs in that Sandbox and its
    variables persist for the next step; without it, each call starts from an empty namespace
    (in a shared child process, started on first use).
    """
    if namespace_session is not None:
        return namespace_session.run(code, image_path, timeout_s=timeout_s, toolbox=toolbox)
    return _shared_sandbox().run(code, image_path, timeout_s=timeout_s, toolbox=toolbox, fresh=True)
