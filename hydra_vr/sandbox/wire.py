"""Messages between the parent and the sandbox child over one socket pair.

Parent -> child messages are ordinary pickles (the parent is trusted). Child -> parent messages
are decoded with an unpickler that refuses every global, so they can only hold plain data (str,
bytes, numbers, lists, tuples, dicts, sets): a compromised child cannot make the parent run code
through pickle. Their size is capped as well.
"""

from __future__ import annotations

import io
import pickle
from multiprocessing.connection import Connection
from typing import Any

from hydra_vr.api.operations import arity, tool_operations

# Upper bound for one child -> parent message: pixel payloads of an untagged image are the largest.
MAX_CHILD_MESSAGE_BYTES = 96 * 1024 * 1024

# The VisionToolbox operations the child may ask for, with their positional arity: derived from the
# operation table (hydra_vr.api.operations) and the toolbox methods' own signatures.
TOOL_OPS: dict[str, int] = {op.name: arity(op.name) for op in tool_operations() if op.name is not None}

# Tags of encoded tool arguments (child side encodes, parent side decodes).
IMAGE_REF = "imgref"  # ("imgref", image_key, (x1, y1, x2, y2) | None): a crop of an image both sides hold
IMAGE_PIXELS = "pixels"  # ("pixels", mode, width, height, bytes): any other image
BOX = "box"  # ("box", x1, y1, x2, y2)


class _PlainDataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"sandbox message refers to {module}.{name}; only plain data is accepted")


def loads_untrusted(data: bytes) -> Any:
    """Decode a child message: plain data only."""
    return _PlainDataUnpickler(io.BytesIO(data)).load()


def send(conn: Connection, message: Any) -> None:
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def recv_trusted(conn: Connection) -> Any:
    """Child side: read a parent message."""
    return pickle.loads(conn.recv_bytes())


class MessageError(Exception):
    """A child message that is not plain data (or not a pickle at all)."""


def recv_untrusted(conn: Connection) -> Any:
    """Parent side: read a child message (plain data, capped size).

    EOFError/OSError when the child is gone or the message is too long; MessageError when it
    cannot be decoded.
    """
    data = conn.recv_bytes(MAX_CHILD_MESSAGE_BYTES)
    try:
        return loads_untrusted(data)
    except Exception as exc:  # garbage can raise nearly anything from the unpickler
        raise MessageError(f"undecodable message: {type(exc).__name__}") from exc
