"""llama.cpp prompt-prefix states on disk, so a new process skips the cold prefill of a long prefix.

An entry is the KV state (``Llama.save_state().llama_state``) right after a stable token prefix
(a role's system prompt and few-shot turns). Its key hashes the tokens and an *identity*:
everything that decides whether a saved state is valid here (the model file, the llama-cpp-python
version, the CPU build and the context parameters that shape the KV cache). A value carries a
header with that identity, its key, its lengths and a sha256 of the payload; an entry failing any
check (truncated, overwritten, another version) is deleted and reported as a miss, never loaded.
Storage is a ``diskcache.Cache``, safe to share between processes, bounded by its size limit:
each write past the limit evicts the least recently used entry (one per write, not diskcache's
default ten, which with entries of tens of MB would empty the cache, the new entry included).
"""

from __future__ import annotations

import hashlib
import json
import logging
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

# Bump when the value layout or the key recipe changes: older entries then simply miss.
FORMAT = 1
MAGIC = b"HVRKVST\n"
_HEADER_LEN = struct.Struct("<I")


def identity_digest(identity: Mapping[str, Any]) -> str:
    text = json.dumps(dict(identity), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{FORMAT}:{text}".encode()).hexdigest()


def _token_bytes(tokens: Sequence[int] | np.ndarray) -> bytes:
    return np.asarray(tokens, dtype="<i4").tobytes()


class StateCacheError(Exception):
    """The cache directory cannot be opened or written (permissions, full disk, locked database)."""


@dataclass
class Lookup:
    """A lookup's outcome: ``state`` is the verified llama.cpp state, or None with ``status`` saying why."""

    status: str  # "hit" | "miss" | "corrupt: <reason>"
    state: memoryview | None = None


class PrefixStateCache:
    """Verified llama.cpp prefix states in a bounded on-disk cache (one directory per use)."""

    def __init__(self, directory: Path | str, identity: Mapping[str, Any], size_limit_bytes: int) -> None:
        self.directory = Path(directory).expanduser()
        self.identity = dict(identity)
        self.identity_digest = identity_digest(self.identity)
        self.size_limit_bytes = int(size_limit_bytes)
        self._cache: Any = None

    def _open(self) -> Any:
        if self._cache is None:
            import diskcache  # sqlite + files; only once a state is looked up

            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                self._cache = diskcache.Cache(
                    str(self.directory), size_limit=self.size_limit_bytes, eviction_policy="least-recently-used",
                    cull_limit=1,
                )
            except Exception as exc:  # OSError, sqlite3.Error
                raise StateCacheError(f"cannot open {self.directory}: {exc}") from exc
        return self._cache

    def key(self, tokens: Sequence[int] | np.ndarray) -> str:
        digest = hashlib.sha256(self.identity_digest.encode())
        digest.update(_token_bytes(tokens))
        return f"kv{FORMAT}-{digest.hexdigest()}"

    def get(self, tokens: Sequence[int] | np.ndarray) -> Lookup:
        """The state saved right after ``tokens``; a bad entry is deleted and reported as corrupt.
        Raises StateCacheError when the cache cannot be opened."""
        key = self.key(tokens)
        cache = self._open()
        try:
            blob = cache.get(key)
        except Exception as exc:  # an unreadable value file or sqlite row: same as a corrupt entry
            blob, error = None, f"unreadable ({exc})"
        else:
            if blob is None:
                return Lookup("miss")
            error = self._check(blob, key, tokens)
        if error is None:
            n = len(tokens) * 4
            view = memoryview(blob)[self._payload_start(blob) :]
            return Lookup("hit", view[n:])
        self.discard(key)
        log.warning("llama.cpp prefix state %s in %s is unusable (%s); rebuilding it", key[:16], self.directory, error)
        return Lookup(f"corrupt: {error}")

    def put(self, tokens: Sequence[int] | np.ndarray, llama_state: bytes | memoryview) -> int:
        """Store the state saved right after ``tokens``; returns the bytes written. Raises StateCacheError."""
        key = self.key(tokens)
        payload_tokens = _token_bytes(tokens)
        digest = hashlib.sha256(payload_tokens)
        digest.update(llama_state)
        header = json.dumps(
            {
                "format": FORMAT,
                "identity": self.identity_digest,
                "key": key,
                "n_tokens": len(tokens),
                "state_size": len(llama_state),
                "sha256": digest.hexdigest(),
            }
        ).encode()
        blob = b"".join([MAGIC, _HEADER_LEN.pack(len(header)), header, payload_tokens, llama_state])
        cache = self._open()
        try:
            cache.set(key, blob)
        except Exception as exc:  # OSError (disk full), sqlite3.Error, diskcache.Timeout
            raise StateCacheError(f"cannot write to {self.directory}: {exc}") from exc
        return len(blob)

    def discard(self, key: str) -> None:
        try:
            self._open().delete(key)
        except Exception as exc:  # deleting is best effort: a corrupt entry never passes _check anyway
            log.warning("could not delete llama.cpp prefix state %s: %s", key[:16], exc)

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    @staticmethod
    def _payload_start(blob: bytes) -> int:
        (n,) = _HEADER_LEN.unpack_from(blob, len(MAGIC))
        return len(MAGIC) + _HEADER_LEN.size + n

    def _check(self, blob: Any, key: str, tokens: Sequence[int] | np.ndarray) -> str | None:
        """None when ``blob`` is a complete, intact entry for ``key`` and ``tokens``; else the reason."""
        if not isinstance(blob, bytes) or not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + _HEADER_LEN.size:
            return "not a prefix-state entry"
        start = self._payload_start(blob)
        try:
            header = json.loads(blob[len(MAGIC) + _HEADER_LEN.size : start])
        except ValueError:
            return "unreadable header"
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            return f"format {header.get('format') if isinstance(header, dict) else '?'} != {FORMAT}"
        if header.get("identity") != self.identity_digest or header.get("key") != key:
            return "saved for another model, version or context"
        n_tokens, state_size = header.get("n_tokens"), header.get("state_size")
        if n_tokens != len(tokens) or not isinstance(state_size, int) or len(blob) - start != 4 * n_tokens + state_size:
            return f"truncated or resized ({len(blob) - start} payload bytes)"
        payload = memoryview(blob)[start:]
        if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
            return "checksum mismatch"
        if bytes(payload[: 4 * n_tokens]) != _token_bytes(tokens):
            return "saved for other tokens"
        return None

    def __repr__(self) -> str:
        return f"PrefixStateCache({str(self.directory)!r}, {self.size_limit_bytes >> 20} MiB)"
