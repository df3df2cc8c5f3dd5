"""Errors of the PyG remote backend.

Misuse of the store API raises the builtin types PyG documents and its own stores raise
(``KeyError`` for an unknown group or attribute, ``IndexError`` for rows out of range,
``ValueError`` for a request the store refuses), so code written against PyG's ``FeatureStore`` /
``GraphStore`` catches them unchanged. A server answers such misuse with an ERROR frame naming the
type, and the client raises the same type with the server's message.

Transport failures (no server, a timeout, a corrupt frame) are not misuse: they raise
``StoreConnectionError``, which is both a ``ConnectionError`` and part of the project's hierarchy
(so the CLIs print it as one line).
"""

from __future__ import annotations

from foundation.errors import MemoryBridgeError, UsageError


class StoreConnectionError(MemoryBridgeError, ConnectionError):
    """The store server cannot be reached, did not answer in time, or sent a broken reply."""


class StoreServerError(MemoryBridgeError):
    """The store server failed while answering (a bug or a broken dataset on its side)."""


class ReadOnlyStoreError(ValueError):
    """A write (put or remove) to a store that cannot change: one served by a remote server, or
    the structure of a read-only RemoteGNN dataset."""


# What an ERROR frame's "type" may name, and the exception the client raises for it.
REMOTE_TYPES: dict[str, type[Exception]] = {
    "KeyError": KeyError,
    "IndexError": IndexError,
    "ValueError": ValueError,
    "ServerError": StoreServerError,
}


def remote_type_of(exc: BaseException) -> str:
    """The ERROR frame type for an exception raised while answering a request."""
    for name in ("KeyError", "IndexError", "ValueError"):
        if isinstance(exc, REMOTE_TYPES[name]):
            return name
    return "ValueError" if isinstance(exc, UsageError) else "ServerError"


def message_of(exc: BaseException) -> str:
    """The message without KeyError's quoting (``str(KeyError('m'))`` is ``"'m'"``)."""
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
