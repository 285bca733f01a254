

class TransportError(Exception):
    """The fifth outcome: the connection or the protocol broke, so the call
    has no answer (no listener, a connection that ended or timed out before
    its reply, a reply that is not the contract's). Never a refusal: the
    request may or may not have run."""


class DecodeError(ValueError):
    """A JSON value that is not the shape a record's ``from_json`` reads,
    named in the codec's words (``missing_field: qty``, ``wrong_type: order``)."""


@final
@dataclass(frozen=True)
class Result(Generic[_T]):
    """The handler returned ``value``."""

    value: _T


@final
@dataclass(frozen=True)
class HandlerError(Generic[_E]):
    """The handler failed with the error its row declares (only a member
    whose row declares one answers it)."""

    error: _E


@final
@dataclass(frozen=True)
class Refusal:
    """The request was not accepted, or was accepted and did not run.
    ``kind`` is one of malformed, digest_mismatch, unauthenticated,
    unauthorized, full, shutting_down, unavailable; ``requires`` is what an
    unauthorized request lacked, ``served`` the digest the exposure serves
    on a digest_mismatch."""

    kind: str
    reason: str
    requires: tuple[str, ...] = ()
    served: str | None = None


@final
@dataclass(frozen=True)
class ServerError:
    """The handler failed structurally (its row's error is
    ``ClosureViolation``); the server says nothing more of it."""


@final
@dataclass(frozen=True)
class Event(Generic[_P]):
    """One event of a subscription. ``seq`` starts at 1 and grows by one per
    event offered to the subscription, so a gap between two is what the
    hub shed."""

    topic: str
    seq: int
    payload: _P


@final
@dataclass(frozen=True)
class Expired:
    """The subscription ended: the credential expired."""


@final
@dataclass(frozen=True)
class Revoked:
    """The subscription ended: a grant its row requires was taken away."""


@final
@dataclass(frozen=True)
class Closed:
    """The subscription ended: the hub stopped (``reason`` is
    ``shutting_down``)."""

    reason: str


@final
@dataclass(frozen=True)
class Lost:
    """The subscription ended: the connection ended with no ``closed``
    frame, or the hub wrote what is not the contract (``why`` says which)."""

    why: str


StreamEnd = Union[Expired, Revoked, Closed, Refusal, Lost]
"""How a subscription ends; the last item it yields."""


def _here(at: str, key: str) -> str:
    return f"{at}.{key}" if at else key


def _object(value: object, at: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise DecodeError(f"wrong_type: {at or 'payload'}")
    return value


def _int(value: object, at: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise DecodeError(f"wrong_type: {at or 'payload'}")
    return value


def _float(value: object, at: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DecodeError(f"wrong_type: {at or 'payload'}")
    return float(value)


def _bool(value: object, at: str) -> bool:
    if not isinstance(value, bool):
        raise DecodeError(f"wrong_type: {at or 'payload'}")
    return value


def _str(value: object, at: str) -> str:
    if not isinstance(value, str):
        raise DecodeError(f"wrong_type: {at or 'payload'}")
    return value


def _none(value: object, at: str) -> None:
    # A row with no response, or a stream with no payload: whatever the
    # server writes there carries nothing.
    return None


def _req(o: dict[str, object], key: str, at: str, read: Callable[[object, str], _T]) -> _T:
    if key not in o:
        raise DecodeError(f"missing_field: {_here(at, key)}")
    return read(o[key], _here(at, key))


def _opt(o: dict[str, object], key: str, at: str, read: Callable[[object, str], _T]) -> _T | None:
    value = o.get(key)
    return None if value is None else read(value, _here(at, key))


@final
@dataclass(frozen=True)
class _Answered:
    # A reply that carries the handler's answer: its value (ok) or its
    # declared error (not ok), still to be decoded by the member.
    ok: bool
    body: object


def _refusal(value: object, where: str) -> Refusal | ServerError:
    if not isinstance(value, dict) or not isinstance(value.get("kind"), str):
        raise TransportError(f"{where}: a reply that is no outcome of the contract")
    kind = value["kind"]
    if kind == "server":
        return ServerError()
    reason = value.get("reason", "")
    requires = value.get("requires", [])
    served = value.get("served")
    if (
        not isinstance(reason, str)
        or not isinstance(requires, list)
        or not all(isinstance(r, str) for r in requires)
        or not (served is None or isinstance(served, str))
    ):
        raise TransportError(f"{where}: a refusal that is not the contract's")
    return Refusal(kind, reason, tuple(requires), served)


def _json(value: object) -> bytes:
    return json.dumps(value, allow_nan=False, separators=(",", ":")).encode()


def _call(
    endpoint: str, bearer: str | None, member: str, payload: object, id: object, timeout: float
) -> _Answered | Refusal | ServerError:
    # The endpoint decides the transport: http://host:port, unix:PATH (a
    # bare path stands for it), or ws://host:port for a surface served over
    # a hub (a call frame on a connection of its own).
    if endpoint.startswith("http://"):
        return _http(endpoint, bearer, member, payload, timeout)
    if endpoint.startswith("unix:"):
        return _unix(endpoint[len("unix:"):], member, payload, id, timeout)
    if endpoint.startswith("ws://"):
        return _hub(endpoint, bearer, member, payload, id, timeout)
    if "://" in endpoint:
        raise ValueError(f"{endpoint}: a call's endpoint is http://host:port, unix:PATH or ws://host:port")
    return _unix(endpoint, member, payload, id, timeout)


def _http(
    endpoint: str, bearer: str | None, member: str, payload: object, timeout: float
) -> _Answered | Refusal | ServerError:
    parts = urllib.parse.urlsplit(endpoint)
    if parts.hostname is None:
        raise ValueError(f"{endpoint}: no host")
    body = _json(payload)
    headers = {"Content-Type": "application/json", "Hale-Surface-Digest": DIGEST}
    if bearer is not None:
        headers["Authorization"] = f"Bearer {bearer}"
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
    try:
        conn.request("POST", parts.path.rstrip("/") + "/call/" + member, body=body, headers=headers)
        reply = conn.getresponse()
        status = reply.status
        data = reply.read()
    except (OSError, http.client.HTTPException) as e:
        raise TransportError(f"{endpoint}: {e}") from e
    finally:
        conn.close()
    try:
        value: object = json.loads(data)
    except ValueError as e:
        raise TransportError(f"{endpoint}: HTTP {status} with a body that is not JSON") from e
    if status == 200:
        return _Answered(True, value)
    if status == 422:
        return _Answered(False, value)
    refusal = value.get("refusal") if isinstance(value, dict) else None
    return _refusal(refusal, f"{endpoint}: HTTP {status}")


def _unix(
    path: str, member: str, payload: object, id: object, timeout: float
) -> _Answered | Refusal | ServerError:
    request: dict[str, object] = {"call": member, "payload": payload}
    if id is not None:
        request["id"] = id
    request["digest"] = DIGEST
    line = _json(request) + b"\n"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    got = bytearray()
    try:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(line)
        while b"\n" not in got:
            chunk = sock.recv(65536)
            if not chunk:
                raise TransportError(f"unix:{path}: the connection ended before the reply")
            got += chunk
    except OSError as e:
        raise TransportError(f"unix:{path}: {e}") from e
    finally:
        sock.close()
    try:
        reply: object = json.loads(got[: got.index(b"\n")])
    except ValueError as e:
        raise TransportError(f"unix:{path}: a reply that is not JSON") from e
    return _line_reply(reply, id, f"unix:{path}")


def _line_reply(reply: object, id: object, where: str) -> _Answered | Refusal | ServerError:
    # A Unix reply line, or a hub's reply frame: § Outcomes' Unix column.
    if not isinstance(reply, dict) or reply.get("id") != id:
        raise TransportError(f"{where}: a reply to another request")
    if reply.get("ok") is True:
        return _Answered(True, reply.get("value"))
    if "error" in reply:
        return _Answered(False, reply["error"])
    return _refusal(reply.get("refusal"), where)


def _hub(
    endpoint: str, bearer: str | None, member: str, payload: object, id: object, timeout: float
) -> _Answered | Refusal | ServerError:
    # A call frame on a connection of its own, presenting the bearer at the
    # upgrade; the first reply frame is this call's.
    ws = _Ws.connect(endpoint, bearer, timeout)
    frame: dict[str, object] = {"type": "call", "call": member, "payload": payload}
    if id is not None:
        frame["id"] = id
    frame["digest"] = DIGEST
    try:
        ws.send(0x1, _json(frame))
        while True:
            fin, opcode, data = ws.recv(timeout)
            if opcode == 0x9:
                ws.send(0xA, data)
                continue
            if opcode == 0x8:
                raise TransportError(f"{endpoint}: the hub closed the connection before the reply")
            if opcode != 0x1 or not fin:
                raise TransportError(f"{endpoint}: a frame the hub does not write (binary or fragmented)")
            try:
                reply: object = json.loads(data)
            except ValueError as e:
                raise TransportError(f"{endpoint}: a frame that is not JSON") from e
            if isinstance(reply, dict) and reply.get("type") == "reply":
                return _line_reply(reply, id, endpoint)
            if isinstance(reply, dict) and reply.get("type") == "closed":
                raise TransportError(f"{endpoint}: the hub stopped before the reply")
    except (OSError, _Ended) as e:
        raise TransportError(f"{endpoint}: the hub did not answer ({e!r})") from e
    finally:
        ws.close()


def _value(body: object, read: Callable[[object, str], _T], member: str) -> _T:
    try:
        return read(body, "")
    except DecodeError as e:
        raise TransportError(f"{member}: a reply that does not decode ({e})") from e


def _answer(
    reply: _Answered | Refusal | ServerError, member: str, read: Callable[[object, str], _T]
) -> Result[_T] | Refusal | ServerError:
    # The outcome of a member whose row declares no handler error: a reply
    # carrying one is not the contract's.
    if isinstance(reply, _Answered):
        if not reply.ok:
            raise TransportError(f"{member}: a handler error from a member that declares none")
        return Result(_value(reply.body, read, member))
    return reply


def _answer_or_error(
    reply: _Answered | Refusal | ServerError,
    member: str,
    read: Callable[[object, str], _T],
    error: Callable[[object, str], _E],
) -> Result[_T] | HandlerError[_E] | Refusal | ServerError:
    if isinstance(reply, _Answered):
        if not reply.ok:
            return HandlerError(_value(reply.body, error, member))
        return Result(_value(reply.body, read, member))
    return reply


_WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class _Ended(Exception):
    # The hub's end of the connection closed (an EOF).
    pass


class _Ws:
    # A WebSocket client (RFC 6455) as far as a hub needs one: the upgrade,
    # masked text frames out, single unmasked frames in, pings answered.

    def __init__(self, sock: socket.socket, got: bytearray) -> None:
        self.sock = sock
        self.got = got

    @staticmethod
    def connect(endpoint: str, bearer: str | None, timeout: float) -> _Ws:
        parts = urllib.parse.urlsplit(endpoint)
        if parts.scheme != "ws" or parts.hostname is None:
            raise ValueError(f"{endpoint}: a hub's endpoint is ws://host:port")
        port = parts.port or 80
        key = base64.b64encode(os.urandom(16))
        head = (
            f"GET {parts.path or '/'} HTTP/1.1\r\n"
            f"Host: {parts.hostname}:{port}\r\n"
            "Upgrade: websocket\r\n"
            "Connection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key.decode()}\r\n"
            "Sec-WebSocket-Version: 13\r\n"
        )
        if bearer is not None:
            head += f"Authorization: Bearer {bearer}\r\n"
        try:
            sock = socket.create_connection((parts.hostname, port), timeout=timeout)
        except OSError as e:
            raise TransportError(f"{endpoint}: {e}") from e
        got = bytearray()
        try:
            sock.sendall((head + "\r\n").encode())
            while b"\r\n\r\n" not in got:
                chunk = sock.recv(65536)
                if not chunk or len(got) > 65536:
                    raise TransportError(f"{endpoint}: the upgrade was not answered")
                got += chunk
        except OSError as e:
            sock.close()
            raise TransportError(f"{endpoint}: {e}") from e
        except TransportError:
            sock.close()
            raise
        end = got.index(b"\r\n\r\n")
        lines = bytes(got[:end]).decode("latin-1").split("\r\n")
        fields: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        accept = base64.b64encode(hashlib.sha1(key + _WS_GUID).digest()).decode()
        if lines[0].split(" ")[1:2] != ["101"] or fields.get("sec-websocket-accept") != accept:
            sock.close()
            raise TransportError(f"{endpoint}: the upgrade was refused ({lines[0]})")
        return _Ws(sock, got[end + 4 :])

    def send(self, opcode: int, data: bytes) -> None:
        n = len(data)
        if n < 126:
            head = bytes([0x80 | opcode, 0x80 | n])
        elif n < 65536:
            head = bytes([0x80 | opcode, 0x80 | 126]) + n.to_bytes(2, "big")
        else:
            head = bytes([0x80 | opcode, 0x80 | 127]) + n.to_bytes(8, "big")
        mask = os.urandom(4)
        stretched = (mask * (n // 4 + 1))[:n]
        masked = (int.from_bytes(data, "big") ^ int.from_bytes(stretched, "big")).to_bytes(n, "big")
        self.sock.sendall(head + mask + masked)

    def _frame(self) -> tuple[bool, int, bytes] | None:
        # The first whole frame of what was read, if there is one.
        got = self.got
        if len(got) < 2:
            return None
        n = got[1] & 0x7F
        at = 2
        if n == 126:
            if len(got) < 4:
                return None
            n, at = int.from_bytes(got[2:4], "big"), 4
        elif n == 127:
            if len(got) < 10:
                return None
            n, at = int.from_bytes(got[2:10], "big"), 10
        if got[1] & 0x80:
            if len(got) < at + 4 + n:
                return None
            mask = got[at : at + 4]
            at += 4
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(got[at : at + n]))
        else:
            if len(got) < at + n:
                return None
            data = bytes(got[at : at + n])
        fin, opcode = bool(got[0] & 0x80), got[0] & 0x0F
        del got[: at + n]
        return fin, opcode, data

    def recv(self, timeout: float | None) -> tuple[bool, int, bytes]:
        # The next frame; TimeoutError when none is whole within `timeout`
        # (what was read stays for the next call), _Ended at an EOF.
        self.sock.settimeout(timeout)
        while True:
            frame = self._frame()
            if frame is not None:
                return frame
            chunk = self.sock.recv(65536)
            if not chunk:
                raise _Ended()
            self.got += chunk

    def close(self) -> None:
        try:
            self.send(0x8, (1000).to_bytes(2, "big"))
        except OSError:
            pass
        self.sock.close()


class Subscription(Generic[_P]):
    """A subscription to one stream of a hub. Iterating it yields each
    ``Event`` with its ``seq``, then one ``StreamEnd`` (``Expired``,
    ``Revoked``, ``Closed``, ``Refusal`` when it was not admitted, ``Lost``
    when the connection ended with no ``closed`` frame), and stops.
    ``next_for`` waits at most a given time. ``close`` ends it from this
    side. Use it as a context manager to close it however the block ends."""

    def __init__(self, topic: str, read: Callable[[object, str], _P], ws: _Ws) -> None:
        self.topic = topic
        self.admitted = False
        self.last_seq = 0
        self.end: StreamEnd | None = None
        self._read = read
        self._ws: _Ws | None = ws
        self._told = False

    @staticmethod
    def open(
        endpoint: str,
        bearer: str | None,
        topic: str,
        read: Callable[[object, str], _P],
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> Subscription[_P]:
        """Connects to the hub at ``endpoint`` (``ws://host:port``),
        presenting ``bearer`` at the upgrade, subscribes to ``topic`` and
        waits at most ``timeout`` for the hub's answer, so that when it
        returns the subscription is admitted (or refused: the refusal is
        then what it yields). Raises ``TransportError`` when the hub does not
        answer."""
        ws = _Ws.connect(endpoint, bearer, timeout)
        sub = Subscription(topic, read, ws)
        try:
            ws.send(0x1, _json({"type": "subscribe", "topic": topic}))
            while not sub.admitted and sub.end is None:
                if sub._frame(timeout) is not None:
                    raise TransportError(f"{endpoint}: an event before the subscription was admitted")
        except (OSError, _Ended, TransportError) as e:
            ws.sock.close()
            if isinstance(e, TransportError):
                raise
            raise TransportError(f"{endpoint}: the hub did not answer the subscribe ({e!r})") from e
        return sub

    def __iter__(self) -> Iterator[Event[_P] | StreamEnd]:
        return self

    def __next__(self) -> Event[_P] | StreamEnd:
        if self._told:
            raise StopIteration
        item = self.next_for(None)
        assert item is not None
        return item

    def next_for(self, timeout: float | None) -> Event[_P] | StreamEnd | None:
        """The next event or the end, waiting at most ``timeout`` seconds
        (``None``: as long as it takes); ``None`` when nothing came in time
        (the subscription goes on). After the end, the end again."""
        while self.end is None:
            try:
                item = self._frame(timeout)
            except TimeoutError:
                return None
            except _Ended:
                self._finish(Lost("the connection ended with no closed frame"))
            except OSError as e:
                self._finish(Lost(f"the connection failed: {e}"))
            else:
                if item is not None:
                    return item
        self._told = True
        return self.end

    def close(self) -> None:
        """Ends the subscription from this side (its connection)."""
        if self.end is None:
            self._finish(Lost("closed by the client"))

    def __enter__(self) -> Subscription[_P]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _finish(self, end: StreamEnd) -> None:
        self.end = end
        if self._ws is not None:
            self._ws.close()
            self._ws = None

    def _frame(self, timeout: float | None) -> Event[_P] | None:
        # Reads one frame: an event of this topic is returned; an answer or
        # an end is recorded; anything else is passed over.
        assert self._ws is not None
        fin, opcode, data = self._ws.recv(timeout)
        if opcode == 0x9:
            self._ws.send(0xA, data)
            return None
        if opcode == 0xA:
            return None
        if opcode == 0x8:
            code = int.from_bytes(data[:2], "big") if len(data) >= 2 else None
            self._finish(Lost(f"the hub closed the connection (code {code}) with no closed frame"))
            return None
        if opcode != 0x1 or not fin:
            self._finish(Lost("a frame the hub does not write (binary or fragmented)"))
            return None
        try:
            frame = _object(json.loads(data), "frame")
        except (ValueError, DecodeError):
            self._finish(Lost("a frame that is not a JSON object"))
            return None
        kind = frame.get("type")
        if kind == "closed":
            reason = frame.get("reason")
            self._finish(Closed(reason if isinstance(reason, str) else ""))
            return None
        if frame.get("topic") != self.topic and not (kind == "refusal" and frame.get("topic") is None):
            return None
        if kind == "subscribed":
            self.admitted = True
        elif kind == "refusal":
            try:
                refusal = _refusal(frame.get("refusal"), self.topic)
            except TransportError as e:
                self._finish(Lost(str(e)))
                return None
            self._finish(refusal if isinstance(refusal, Refusal) else Lost("a server error on a stream"))
        elif kind == "unauthorized":
            reason = frame.get("reason")
            if reason == "expired":
                self._finish(Expired())
            elif reason == "revoked":
                self._finish(Revoked())
            else:
                self._finish(Lost(f"unauthorized for a reason the contract does not name: {reason!r}"))
        elif kind == "event":
            try:
                seq = _int(frame.get("seq"), "seq")
                payload = self._read(frame.get("payload"), "")
            except DecodeError as e:
                self._finish(Lost(f"an event that does not decode ({e})"))
                return None
            self.last_seq = seq
            return Event(self.topic, seq, payload)
        return None
