"""Sandboxed execution of generated programs: policy-checked, in a locked-down child process.

``run_program(code, image_path)`` for one step; ``Sandbox`` for an episode whose variables persist
across steps. Vision calls are proxied to the parent's toolbox (models are never loaded in the child).
"""

from hydra_vr.sandbox.policy import DEFAULT_ALLOWED_MODULES, PolicyError, compile_program
from hydra_vr.sandbox.results import ERROR_KINDS, ErrorKind, ProgramResult, StepTimings, VariableInfo
from hydra_vr.sandbox.runner import run_program
from hydra_vr.sandbox.session import Sandbox, SandboxError

__all__ = [
    "DEFAULT_ALLOWED_MODULES", "ERROR_KINDS", "ErrorKind", "PolicyError", "ProgramResult", "Sandbox",
    "SandboxError", "StepTimings", "VariableInfo", "compile_program", "run_program",
]
