"""Reading dataset files with errors that name the file and what it should have held."""

from __future__ import annotations

import json
import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hydra_vr.datasets.base import DatasetError, MissingFileError


def require_file(path: Path, what: str) -> Path:
    if not path.is_file():
        raise MissingFileError(f"{path}: file not found (expected {what})")
    return path


def read_json(path: Path, what: str, top: type[dict] | type[list]) -> Any:
    """Load ``path`` and check its top-level type; ``what`` describes the expected content."""
    require_file(path, what)
    try:
        with path.open("r", encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise DatasetError(
            f"{path}: malformed JSON at line {e.lineno} column {e.colno} ({e.msg}); expected {what}"
        ) from None
    except UnicodeDecodeError as e:
        raise DatasetError(f"{path}: not UTF-8 text ({e.reason}); expected {what}") from None
    if not isinstance(data, top):
        kind = "a JSON object" if top is dict else "a JSON list"
        raise DatasetError(f"{path}: expected {kind} at top level ({what}), got {type(data).__name__}")
    return data


def field_of(record: Any, name: str, path: Path, where: str) -> Any:
    """``record[name]``, or a DatasetError naming the file, the record and the missing field."""
    if not isinstance(record, Mapping):
        raise DatasetError(f"{path}: {where} should be an object, got {type(record).__name__}")
    try:
        return record[name]
    except KeyError:
        raise DatasetError(f"{path}: {where} is missing field {name!r}") from None


_PLAIN_BUILTINS = frozenset({"set", "frozenset", "list", "dict", "tuple", "str", "int", "float"})


class _PlainUnpickler(pickle.Unpickler):
    """Refuses classes other than plain builtins: official refs pickles hold only lists, dicts,
    strings and numbers, and a pickle that asks for any other class could run arbitrary code."""

    def find_class(self, module: str, name: str) -> Any:
        if module in ("builtins", "__builtin__") and name in _PLAIN_BUILTINS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}: only plain data is expected")


def read_plain_pickle(path: Path, what: str) -> Any:
    """Load a pickle of plain Python data; Python-2 pickles (str as bytes) retry with latin1."""
    require_file(path, what)
    last_error: Exception | None = None
    for encoding in ("ASCII", "latin1"):
        try:
            with path.open("rb") as f:
                return _PlainUnpickler(f, encoding=encoding).load()
        except UnicodeDecodeError as e:
            last_error = e
        except (pickle.UnpicklingError, EOFError, ValueError, IndexError, KeyError) as e:
            raise DatasetError(f"{path}: not a readable pickle of {what} ({e})") from None
    raise DatasetError(f"{path}: cannot decode pickle strings ({last_error}); expected {what}")
