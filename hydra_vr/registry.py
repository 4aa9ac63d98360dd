"""One way to register pluggable components (vision tools, LLM backends, ...).

A registry maps a config name to an import target ``"package.module:Factory"``. Targets are
imported only when the component is built, so importing hydra_vr loads no model, and a
third-party package can add backends with ``registry.register(name, target_or_factory)``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class UnknownComponentError(KeyError):
    """Raised when a config names a component that no registry entry provides."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


class Registry(Generic[T]):
    """Config name -> factory, resolved lazily."""

    def __init__(self, kind: str, targets: Mapping[str, str | Callable[..., T]] | None = None) -> None:
        self.kind = kind
        self._targets: dict[str, str | Callable[..., T]] = dict(targets or {})

    def register(self, name: str, target: str | Callable[..., T]) -> None:
        """Add or replace ``name``; ``target`` is a factory or an ``"module:attr"`` string."""
        self._targets[name] = target

    def names(self) -> list[str]:
        return sorted(self._targets)

    def __contains__(self, name: object) -> bool:
        return name in self._targets

    def factory(self, name: str) -> Callable[..., T]:
        try:
            target = self._targets[name]
        except KeyError:
            raise UnknownComponentError(
                f"unknown {self.kind} backend {name!r}; available: {', '.join(self.names())}"
            ) from None
        if callable(target):
            return target
        module_name, _, attr = target.partition(":")
        module = importlib.import_module(module_name)
        return getattr(module, attr)

    def create(self, name: str, **kwargs: Any) -> T:
        """Build the component registered as ``name`` with keyword options from the config."""
        return self.factory(name)(**kwargs)
