"""Python trainers against the real master, on loopback."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

from conftest import ROOT, binary, write_dataset
from trainmaster import Client, Digest, EtcdResolver, recordio

PYTHON = [sys.executable, "-m", "trainmaster"]


def expected(pattern: str) -> Digest:
    d = Digest()
    for record in recordio.scan(*sorted(glob.glob(pattern))):
        d.add(record)
    return d


def run_python_trainer(*args: str) -> subprocess.Popen:
    return subprocess.Popen([*PYTHON, "train", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT / "python")


def finish(p: subprocess.Popen, timeout: float = 120):
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, f"{p.args} exited {p.returncode}:\n{err}"
    return out


def test_passes_and_digests_match_the_go_trainer(tmp_path, master):
    pattern = write_dataset(tmp_path / "data", 3, 200)
    want = expected(pattern)
    _, addr = master("-passes", "2", "-chunks-per-task", "3")
    out = finish(run_python_trainer("--addr", addr, "--dataset", pattern))
    line = f"{want.records} records, {want.bytes} bytes, digest {want}"
    assert out.splitlines() == [f"pass 0: {line}", f"pass 1: {line}"]
    # The Go trainer prints the same line for the same data, in a job of its own.
    _, addr2 = master("-passes", "1", "-namespace", "/go")
    go = subprocess.run([binary("trainer"), "-addr", addr2, "-dataset", pattern], capture_output=True, text=True,
                        timeout=120)
    assert go.returncode == 0, go.stderr
    assert go.stdout.splitlines() == [f"pass 0: {line}"]


def per_task(lines):
    """{pass: {task: digest}} from JSON lines, checking no task is consumed twice."""
    seen = defaultdict(dict)
    for line in lines:
        r = json.loads(line)
        if "task" in r:
            assert r["task"] not in seen[r["pass"]], f"task {r['task']} of pass {r['pass']} consumed twice"
            seen[r["pass"]][r["task"]] = r
    return seen


def test_python_and_go_trainers_share_a_job_found_through_etcd(tmp_path, etcd, master):
    pattern = write_dataset(tmp_path / "data", 4, 300)
    want = expected(pattern)
    master("-passes", "2", "-chunks-per-task", "2")
    trainers = [run_python_trainer("--endpoints", etcd, "--dataset", pattern, "--json") for _ in range(2)]
    trainers.append(subprocess.Popen([binary("trainer"), "-endpoints", etcd, "-dataset", pattern, "-json",
                                      "-record-delay", "500us"],  # so that the Python trainers, slower to start, get tasks
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [finish(p) for p in trainers]
    seen = per_task(line for out in outs for line in out.splitlines())
    assert any('"task"' in out for out in outs[:2]) and '"task"' in outs[2], "the Python or the Go trainers consumed nothing"
    for p in range(2):
        total = Digest()
        for r in seen[p].values():
            total.combine(Digest(r["records"], r["bytes"], int(r["digest"], 16)))
        assert (total.records, total.bytes, str(total)) == (want.records, want.bytes, str(want))


def test_failover_kill9_mid_pass(tmp_path, master):
    pattern = write_dataset(tmp_path / "data", 4, 400)
    want = expected(pattern)
    leader, _ = master("-passes", "2", "-chunks-per-task", "2", "-task-timeout-min", "2s")
    standby, _ = master("-passes", "2", "-chunks-per-task", "2", "-task-timeout-min", "2s", wait=False)
    standby.wait_for(r"standing by")
    etcd_url = leader.args[leader.args.index("-endpoints") + 1]
    consumed = defaultdict(dict)
    errors = []
    lock = threading.Lock()

    def trainer():
        try:
            with Client(EtcdResolver([etcd_url]), min_backoff=0.05, max_backoff=0.5, call_timeout=5) as c:
                c.report_dataset([pattern])
                d = Digest()
                for rec in c.records():
                    d.add(rec.data)
                    time.sleep(0.0005)
                    if rec.last:
                        with lock:
                            consumed[rec.pass_][rec.task] = d
                        d = Digest()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=trainer) for _ in range(3)]
    for t in threads:
        t.start()
    while True:
        with lock:
            if len(consumed[0]) >= 20:
                break
        time.sleep(0.01)
    leader.p.send_signal(signal.SIGKILL)
    standby.wait_for(r"leading: serving trainers", timeout=30)
    for t in threads:
        t.join(180)
    assert not errors, errors
    for p in range(2):
        total = Digest()
        for d in consumed[p].values():
            total.combine(d)
        assert (total.records, str(total)) == (want.records, str(want)), f"pass {p}"


def test_damaged_block_is_reported_failed(tmp_path, master):
    pattern = write_dataset(tmp_path / "data", 2, 200)
    proc, addr = master("-passes", "1", "-chunks-per-task", "1", "-task-timeout-max", "1")
    with Client(addr) as c:
        c.report_dataset([pattern])
        path = sorted(glob.glob(pattern))[1]
        third = recordio.index(path)[3]
        with open(path, "r+b") as f:  # damaged after the dataset was accepted
            f.seek(third.offset + recordio.HEADER.size + 2)
            f.write(b"\xff\xff")
        records = sum(1 for _ in c.records())
        st = c.status()
    proc.wait_for(r"task failed; back in todo.*checksum mismatch")
    proc.wait_for(r"failed too often; discarded for this pass")
    assert st["AllDone"]
    assert records == 400 - third.records


def test_token(tmp_path, master):
    from trainmaster import Unauthorized

    pattern = write_dataset(tmp_path / "data", 1, 50)
    token_file = tmp_path / "token"
    token_file.write_text("py-T0ken\n")
    _, addr = master("-token-file", str(token_file))
    with Client(addr, token="wrong", max_backoff=0.1) as c:
        start = time.monotonic()
        try:
            c.status()
        except Unauthorized as e:
            assert "not authenticated" in str(e)
        else:
            raise AssertionError("a wrong token was accepted")
        assert time.monotonic() - start < 5, "a refused token was retried"
    out = finish(run_python_trainer("--addr", addr, "--dataset", pattern, "--token-file", str(token_file)))
    assert out.startswith("pass 0: 50 records")


def make_certs(tmp_path: Path):
    """A CA and a certificate for 127.0.0.1 it signs, made with openssl."""
    d = tmp_path / "pki"
    d.mkdir()
    run = lambda *a: subprocess.run(["openssl", *a], check=True, capture_output=True)  # noqa: E731
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    run("req", "-x509", *ec, "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"), "-days", "1", "-subj", "/CN=test CA")
    run("req", *ec, "-keyout", str(d / "server.key"), "-out", str(d / "server.csr"), "-subj", "/CN=127.0.0.1")
    (d / "san").write_text("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", str(d / "server.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
        "-CAcreateserial", "-out", str(d / "server.pem"), "-days", "1", "-extfile", str(d / "san"))
    return d / "ca.pem", d / "server.pem", d / "server.key"


def test_tls_port(tmp_path, master):
    import ssl

    from trainmaster import MasterError

    ca, cert, key = make_certs(tmp_path)
    pattern = write_dataset(tmp_path / "data", 1, 60)
    _, addr = master("-tls-cert", str(cert), "-tls-key", str(key))
    with Client(addr, max_backoff=0.1) as plain:
        try:
            plain.status()
        except MasterError as e:
            assert "this port speaks TLS" in str(e)
        else:
            raise AssertionError("a plain client was served on the TLS port")
    with Client(addr, tls=ssl.create_default_context(cafile=str(ca))) as c:
        c.report_dataset([pattern])
        assert sum(1 for _ in c.records()) == 60


def test_discovery_through_etcd_with_a_password(tmp_path, etcd, master):
    import base64
    import urllib.request

    def post(path, body, token=None):
        req = urllib.request.Request(etcd + path, data=json.dumps(body).encode(), method="POST")
        if token:
            req.add_header("Authorization", token)
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.loads(r.read())

    post("/v3/auth/role/add", {"name": "root"})
    post("/v3/auth/user/add", {"name": "root", "password": "pw-root"})
    post("/v3/auth/user/grant", {"user": "root", "role": "root"})
    post("/v3/auth/enable", {})
    pattern = write_dataset(tmp_path / "data", 1, 40)
    proc, addr = master("-etcd-user", "root", "-etcd-password", "pw-root")
    key = base64.b64encode(b"/master/addr").decode()
    try:
        post("/v3/kv/range", {"key": key})
    except urllib.error.HTTPError:
        pass
    else:
        raise AssertionError("etcd answered without a password")
    resolver = EtcdResolver([etcd], user="root", password="pw-root")
    assert resolver() == addr
    with Client(resolver) as c:
        c.report_dataset([pattern])
        assert sum(1 for _ in c.records()) == 40


def test_dataset_reported_again_to_a_master_that_lost_it(tmp_path, etcd, master):
    import base64
    import urllib.request

    pattern = write_dataset(tmp_path / "data", 1, 30)
    first, addr = master()
    with Client(EtcdResolver([etcd]), min_backoff=0.05, max_backoff=0.3) as c:
        c.report_dataset([pattern])
        first.p.send_signal(signal.SIGKILL)
        first.p.wait()
        b64 = lambda s: base64.b64encode(s).decode()  # noqa: E731
        req = urllib.request.Request(etcd + "/v3/kv/deleterange", method="POST",
                                     data=json.dumps({"key": b64(b"/task_queues/"), "range_end": b64(b"/task_queues0")}).encode())
        urllib.request.urlopen(req, timeout=5).read()  # the job's state is gone
        second, _ = master()
        task = c.get_task()  # "dataset not reported": the client reports it again, then asks again
        assert task["Epoch"] == 1
        second.wait_for(r"dataset accepted")


def test_etcd_over_tls(tmp_path, procs, master):
    import ssl

    ca, cert, key = make_certs(tmp_path)
    p = procs(binary("etcd-embed"), "-data-dir", str(tmp_path / "etcd-tls"), "-listen-client", "127.0.0.1:0",
              "-listen-peer", "127.0.0.1:0", "-unsafe-no-fsync", "-cert-file", str(cert), "-key-file", str(key))
    url = p.wait_for(r"^ready (\S+)").group(1)
    assert url.startswith("https://")
    m = procs(binary("master"), "-addr", "127.0.0.1:0", "-endpoints", url, "-etcd-cacert", str(ca), "-ttl", "2")
    addr = m.wait_for(r'msg="leading: serving trainers" addr="?([^" ]+)').group(1)
    assert EtcdResolver([url], tls=ssl.create_default_context(cafile=str(ca)))() == addr


def test_snappy_without_the_module_is_a_clear_error(monkeypatch):
    from conftest import FIXTURES

    monkeypatch.setitem(sys.modules, "snappy", None)  # import snappy now fails
    try:
        list(recordio.scan(str(FIXTURES / "snappy.recordio")))
    except recordio.RecordIOError as e:
        assert "python3-snappy" in str(e)
    else:
        raise AssertionError("a snappy file was read without the snappy module")
