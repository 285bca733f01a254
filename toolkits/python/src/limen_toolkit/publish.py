"""Publishing an event from a handler that ``hale serve`` runs.

``hale serve --control PATH`` gives each handler process the control
socket's path in ``HALE_CONTROL``; an event is one line on it, ``publish
TOPIC JSON``, answered ``ok`` or ``error: …`` once the server has held the
payload to the topic's shape and offered it to every hub that streams the
topic. One connection is kept for the life of the process.

The Rust toolkit's ``limen_toolkit::publish``, ported: the same line, the
same answers, the same refusals.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Optional

CONTROL_VAR = "HALE_CONTROL"
"""The variable a served handler finds the control socket's path in."""


class PublishError(OSError):
    """The event was not published: ``HALE_CONTROL`` is unset, the server
    closed the socket, or the server refused the event (its reason)."""


_lock = threading.Lock()
# The connection, and what has been read of it past the last answer.
_conn: Optional[socket.socket] = None
_pending = b""


def _read_line(conn: socket.socket) -> bytes:
    """One line of the server's answers, without its newline; ``b""`` and
    no newline when the server closed the socket."""
    global _pending
    while b"\n" not in _pending:
        chunk = conn.recv(4096)
        if not chunk:
            return b""
        _pending += chunk
    line, _, _pending = _pending.partition(b"\n")
    return line + b"\n"


def publish(topic: str, payload: str) -> None:
    """Publishes ``payload`` (JSON text) on ``topic`` through the server's
    control socket.

    Raises :class:`ValueError` when the topic is not one word or the payload
    not one line; :class:`PublishError` when the process was not given a
    socket (``HALE_CONTROL`` unset: the server runs without ``--control``),
    when the server closed it, or when the server refused the event (an
    unknown topic, a payload not of the topic's shape: the server's
    reason); any other :class:`OSError` when the socket cannot be reached.
    Safe to call from several threads: one event at a time.
    """
    global _conn, _pending
    if any(c.isspace() for c in topic) or "\n" in payload:
        raise ValueError("a topic is one word and a payload one line")
    with _lock:
        if _conn is None:
            path = os.environ.get(CONTROL_VAR)
            if path is None:
                raise PublishError(
                    "HALE_CONTROL is not set: the server was started without --control"
                )
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                conn.connect(path)
            except OSError:
                conn.close()
                raise
            _conn, _pending = conn, b""
        conn = _conn
        try:
            conn.sendall(f"publish {topic} {payload}\n".encode())
            answer = _read_line(conn)
        except OSError:
            _drop()
            raise
        if not answer:
            _drop()
            raise PublishError("the server closed the control socket")
        text = answer.decode("utf-8", "replace").strip()
        if text == "ok":
            return
        raise PublishError(text.removeprefix("error: "))


def _drop() -> None:
    """Forgets the connection, so the next event connects again."""
    global _conn, _pending
    if _conn is not None:
        _conn.close()
    _conn, _pending = None, b""
