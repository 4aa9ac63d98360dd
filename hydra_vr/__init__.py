"""hydra-vr: compositional visual reasoning (HYDRA / ViperGPT style).

Importing the package loads no model and touches no file; everything heavy is lazy.

In a notebook::

    import hydra_vr
    ImagePatch = hydra_vr.load()              # the default offline profile, models load on first use
    bus = ImagePatch("sample:bus").find("bus")[0]
    bus.simple_query("How many doors does the bus have?")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hydra_vr.api.image_patch import ImagePatch

__version__ = "0.1.0"


def load(config: str = "default", overrides: list[str] | None = None) -> type[ImagePatch]:
    """An ``ImagePatch`` class bound to the vision tools (and LLM) of ``config``.

    ``config`` is a packaged profile (default, hub, openai) or a YAML file; ``overrides`` are
    ``section.field=value`` strings as for ``--set``. Each call builds its own toolbox: no global state,
    so two configurations can be used side by side. Models load on first use, not here.
    """
    from hydra_vr.api.image_patch import bind_toolbox
    from hydra_vr.config import load_config
    from hydra_vr.factory import build_toolbox

    return bind_toolbox(build_toolbox(load_config(config, overrides)))


__all__ = ["__version__", "load"]
