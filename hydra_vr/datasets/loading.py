"""Dataset loaders by name, resolved lazily through a :class:`~hydra_vr.registry.Registry`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hydra_vr.datasets.base import DatasetError, Sample
from hydra_vr.registry import Registry

Loader = Callable[..., list[Sample]]

_D = "hydra_vr.datasets"
_BUILTIN: dict[str, str] = {
    "gqa": f"{_D}.gqa:load_gqa",
    "okvqa": f"{_D}.okvqa:load_okvqa",
    "aokvqa": f"{_D}.aokvqa:load_aokvqa",
    "refcoco": f"{_D}.refcoco:load_refcoco",
    "refcoco-unc": f"{_D}.refcoco:load_refcoco",
    "refcoco-google": f"{_D}.refcoco:load_refcoco_google",
    "refcoco+": f"{_D}.refcoco:load_refcoco_plus",
    "refcoco+-unc": f"{_D}.refcoco:load_refcoco_plus",
    "refcocog": f"{_D}.refcoco:load_refcocog",
    "refcocog-umd": f"{_D}.refcoco:load_refcocog",
    "refcocog-google": f"{_D}.refcoco:load_refcocog_google",
    "user": f"{_D}.user:load_user",
    "easy-vqa": f"{_D}.easyvqa:load_easy_vqa",
}
_ALIASES = {"ok-vqa": "okvqa", "a-okvqa": "aokvqa", "easyvqa": "easy-vqa"}

# Loaders that work without a data_root (they fall back to data shipped with a package).
_NO_ROOT_NEEDED = {"easy-vqa"}


def default_dataset_registry() -> Registry[list[Sample]]:
    """A fresh registry with the built-in loaders; callers may ``register`` their own.

    A loader is called as ``loader(data_root, split, limit, **options)`` and returns samples.
    """
    return Registry("dataset", _BUILTIN)


def canonical_name(name: str) -> str:
    """Lower-case, ``_`` -> ``-``, and common spellings (``ok-vqa``, ``easy_vqa``) folded."""
    key = name.strip().lower().replace("_", "-")
    return _ALIASES.get(key, key)


def load_dataset(
    name: str,
    data_root: Path | str | None,
    split: str | None = None,
    limit: int | None = None,
    *,
    registry: Registry[list[Sample]] | None = None,
    **options: Any,
) -> list[Sample]:
    """Load benchmark ``name`` from ``data_root``; ``split=None`` picks the dataset's default.

    ``options`` go to the loader (e.g. ``version="all"`` for GQA, ``split_by="google"`` for
    RefCOCO, ``coco_root=...`` / ``image_dir=...`` where images live apart from annotations).
    Image files are not checked here: see :func:`check_images` and :meth:`Sample.require_image`.
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    key = canonical_name(name)
    registry = registry or default_dataset_registry()
    loader = registry.factory(key if key in registry else name)
    if data_root is None and key not in _NO_ROOT_NEEDED:
        raise DatasetError(f"dataset {name!r} needs data_root (the folder holding its files)")
    root = Path(data_root).expanduser() if data_root is not None else None
    return loader(root, split, limit, **options)
