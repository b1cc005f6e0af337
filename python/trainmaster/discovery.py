"""Finding the master: its address is the value of NS/master/addr in etcd,
read here through etcd's HTTP JSON gateway (POST /v3/kv/range, keys in
base64), so that no etcd package is needed."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from typing import Callable, List, Optional, Sequence

__all__ = ["addr_key", "EtcdResolver", "static"]


def addr_key(namespace: str = "") -> str:
    """The key of the master's address: NS/master/addr."""
    return namespace + "/master/addr"


def static(addr: str) -> Callable[[], str]:
    """A resolver that always answers addr."""
    return lambda: addr


class EtcdResolver:
    """Reads the master's address from etcd, trying each endpoint in turn.
    With user and password it authenticates first (POST /v3/auth/authenticate)
    and sends the token it gets; with tls (an ssl.SSLContext) it speaks
    HTTPS."""

    def __init__(self, endpoints: Sequence[str], namespace: str = "", *, user: Optional[str] = None,
                 password: Optional[str] = None, tls: Optional[ssl.SSLContext] = None, timeout: float = 5.0) -> None:
        if not endpoints:
            raise ValueError("no etcd endpoints given")
        self.endpoints: List[str] = [e.rstrip("/") for e in endpoints]
        self.namespace = namespace
        self._user, self._password, self._tls, self._timeout = user, password, tls, timeout

    def _post(self, endpoint: str, path: str, body: dict, token: Optional[str] = None) -> dict:
        req = urllib.request.Request(endpoint + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        if token:
            req.add_header("Authorization", token)
        with urllib.request.urlopen(req, timeout=self._timeout, context=self._tls) as resp:
            return json.loads(resp.read())

    def __call__(self) -> str:
        key = base64.b64encode(addr_key(self.namespace).encode()).decode()
        errors = []
        for endpoint in self.endpoints:
            try:
                token = None
                if self._user:
                    token = self._post(endpoint, "/v3/auth/authenticate",
                                       {"name": self._user, "password": self._password or ""})["token"]
                kvs = self._post(endpoint, "/v3/kv/range", {"key": key}, token).get("kvs") or []
            except (OSError, urllib.error.URLError, ValueError, KeyError) as e:
                errors.append(f"{endpoint}: {e}")
                continue
            if not kvs:
                raise LookupError(f"no master has published its address at {addr_key(self.namespace)} in etcd")
            return base64.b64decode(kvs[0]["value"]).decode()
        raise ConnectionError("etcd did not answer: " + "; ".join(errors))
