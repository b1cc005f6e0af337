"""A JSON-RPC 1.0 connection to the master (doc/protocol.md): one call at a
time, over TCP or TLS, the token presented first when one is given."""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from typing import Any, Callable, Optional

from .errors import ConnectionLost, from_text

__all__ = ["Connection"]

SERVICE = "Master"


class Connection:
    """One connection to the master at addr ("host:port"). Calls are
    serialised; a failure of the connection, or no reply within timeout,
    raises ConnectionLost and leaves it closed."""

    def __init__(self, addr: str, *, timeout: float = 30.0, tls: Optional[ssl.SSLContext] = None,
                 server_name: Optional[str] = None, token: Optional[str] = None) -> None:
        host, _, port = addr.rpartition(":")
        try:
            sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
            if tls is not None:
                sock = tls.wrap_socket(sock, server_hostname=server_name or host.strip("[]"))
        except (OSError, ValueError) as e:
            raise ConnectionLost(f"dial master {addr}: {e}") from e
        self.addr = addr
        self._sock = sock
        self._timeout = timeout
        self._buf = bytearray()  # what was received past the last reply read
        self._lock = threading.Lock()
        self._next_id = 0
        if token:
            try:
                self.call("Authenticate", token)
            except BaseException:
                self.close()
                raise

    def call(self, method: str, arg: Any, *, overdue: Optional[Callable[[], Optional[str]]] = None,
             every: float = 2.0) -> Any:
        """Calls Master.<method> (or <Service>.<method>, when method names
        its service) with arg and returns the result, or raises
        the contract's exception for the error the master answered. With
        overdue, a call still without a reply asks it, every `every`
        seconds, whether to give up: a reason returned abandons the call.
        An abandoned call, or one without a reply within the connection's
        timeout, closes the connection (a reply that comes later must not be
        read as another call's) and raises ConnectionLost."""
        with self._lock:
            self._next_id += 1
            name = method if "." in method else f"{SERVICE}.{method}"  # another service names itself
            request = {"method": name, "params": [arg], "id": self._next_id}
            deadline = time.monotonic() + self._timeout
            try:
                self._sock.settimeout(self._timeout)
                self._sock.sendall(json.dumps(request).encode() + b"\n")
                line = self._readline(method, deadline, overdue, every)
            except OSError as e:
                self.close()
                raise ConnectionLost(f"{SERVICE}.{method}: {e}") from e
            except BaseException:  # abandoned, or overdue failed: the reply must not answer another call
                self.close()
                raise
            if not line:
                self.close()
                raise ConnectionLost(f"{SERVICE}.{method}: the master closed the connection")
            reply = json.loads(line)
        if reply.get("id") is None and reply.get("error") is not None:
            self.close()  # an answer to the connection, not the call: "this port speaks TLS"
            raise from_text(str(reply["error"]))
        if reply.get("id") != request["id"]:
            self.close()
            raise ConnectionLost(f"{SERVICE}.{method}: reply {reply.get('id')} to call {request['id']}")
        if reply.get("error") is not None:
            raise from_text(str(reply["error"]))
        return reply.get("result")

    def _readline(self, method: str, deadline: float, overdue: Optional[Callable[[], Optional[str]]],
                  every: float) -> bytes:
        """The next line received, b"" if the master closed the connection
        first. It waits until deadline, in slices of `every` seconds when
        overdue is given, asking overdue between them (see call)."""
        check = time.monotonic() + every
        while True:
            end = self._buf.find(b"\n")
            if end >= 0:
                line = bytes(self._buf[:end + 1])
                del self._buf[:end + 1]
                return line
            now = time.monotonic()
            wait = min(deadline, check) - now if overdue is not None else deadline - now
            self._sock.settimeout(max(wait, 0.01))  # 0 would make the socket non-blocking
            try:
                data = self._sock.recv(65536)
            except socket.timeout:
                now = time.monotonic()
                if now >= deadline:
                    raise ConnectionLost(f"{SERVICE}.{method}: no reply in {self._timeout:g} s") from None
                if overdue is not None and now >= check:
                    reason = overdue()
                    if reason:
                        raise ConnectionLost(f"{SERVICE}.{method}: {reason}") from None
                    check = time.monotonic() + every
                continue
            if not data:
                return b""
            self._buf += data

    def close(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass
