"""A JSON-RPC 1.0 connection to the master (doc/protocol.md): one call at a
time, over TCP or TLS, the token presented first when one is given."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from typing import Any, Optional

from .errors import ConnectionLost, from_text

__all__ = ["Connection"]

SERVICE = "Master"


class Connection:
    """One connection to the master at addr ("host:port"). Calls are
    serialised; a failure of the connection raises ConnectionLost and
    leaves it closed."""

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
        self._reader = sock.makefile("rb")
        self._lock = threading.Lock()
        self._next_id = 0
        if token:
            try:
                self.call("Authenticate", token)
            except BaseException:
                self.close()
                raise

    def call(self, method: str, arg: Any) -> Any:
        """Calls Master.<method> with arg and returns the result, or raises
        the contract's exception for the error the master answered."""
        with self._lock:
            self._next_id += 1
            request = {"method": f"{SERVICE}.{method}", "params": [arg], "id": self._next_id}
            try:
                self._sock.sendall(json.dumps(request).encode() + b"\n")
                line = self._reader.readline()
            except OSError as e:
                self.close()
                raise ConnectionLost(f"{SERVICE}.{method}: {e}") from e
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

    def close(self) -> None:
        try:
            self._reader.close()
            self._sock.close()
        except OSError:
            pass
