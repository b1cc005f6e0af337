"""torchrun's agents meet at the master (python -m trainmaster.run,
--rdzv_backend trainmaster): real masters on a real etcd, real agents and
gloo workers on loopback."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from conftest import BIN, ROOT, readme_master

WORKER = str(Path(__file__).parent / "rdzv_worker.py")


def agent(procs, addr: str, nnodes: str, steps: int, run_id: str = "job-1", grace: int = 4):
    env = {"PYTHONPATH": str(ROOT / "python")}
    return procs(sys.executable, "-m", "trainmaster.run", "--nnodes", nnodes, "--nproc_per_node", "1",
                 "--max_restarts", "3", "--monitor_interval", "0.5", "--rdzv_backend", "trainmaster",
                 "--rdzv_endpoint", addr, "--rdzv_id", run_id, "--rdzv_conf", f"last_call=1,grace={grace}",
                 WORKER, "--steps", str(steps), env=env)


def etcd_revision(etcd: str) -> int:
    req = urllib.request.Request(etcd + "/v3/kv/range", data=json.dumps({"key": "AA=="}).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=5) as resp:
        return int(json.loads(resp.read())["header"]["revision"])


def test_two_agents_form_a_round_and_train(procs, master, etcd):
    """Two agents form a round and train. The round cost etcd four writes
    (two joins, the end of the last call, the store); while they train,
    their heartbeats (a poll every 0.5 s each) write nothing."""
    proc, addr = master()
    before = etcd_revision(etcd)
    agents = [agent(procs, addr, "2:3", 20) for _ in range(2)]
    for a in agents:
        a.wait_for(r"worker rank \d of 2: pid", timeout=60)
    idle_from = etcd_revision(etcd)
    assert idle_from - before == 4, f"the round cost {idle_from - before} writes"
    time.sleep(2)
    assert etcd_revision(etcd) == idle_from, "etcd written to while the round trained"
    for a in agents:
        a.wait_for(r"worker rank \d of 2: 20 steps done", timeout=60)
        assert a.p.wait(30) == 0, "".join(a.lines[-30:])
    ranks = sorted(re.search(r"worker rank (\d) of 2: pid", "".join(a.lines)).group(1) for a in agents)
    assert ranks == ["0", "1"]
    log = "".join(proc.lines)
    assert "rendezvous job-1: round 0 complete with 2 nodes: its last call of 1s is over" in log
    assert re.search(r"rank 0 of round 0, hosts its store at 127\.0\.0\.1:\d+", log)


def test_the_agent_of_rank_0_killed(procs, master):
    """Three agents of a job of 2 to 3 nodes train; the node holding rank 0
    dies (its agent and worker killed with SIGKILL: what c10d's store, hosted
    by one agent, does not survive); the other two re-form without it after
    the grace, and finish."""
    proc, addr = master()
    grace = 4
    agents = [agent(procs, addr, "2:3", 60, grace=grace) for _ in range(3)]
    pids = {}
    for a in agents:
        m = a.wait_for(r"worker rank (\d) of 3: pid (\d+) agent (\d+)", timeout=60)
        pids[m.group(1)] = (a, int(m.group(2)), int(m.group(3)))
    victim, worker_pid, agent_pid = pids["0"]
    assert victim.p.pid == agent_pid
    time.sleep(2)  # mid-run
    killed = time.monotonic()
    for pid in (agent_pid, worker_pid):
        os.kill(pid, signal.SIGKILL)
    rest = [a for a in agents if a is not victim]
    for a in rest:
        a.wait_for(r"worker rank \d of 2: pid", timeout=grace + 30)
    reformed = time.monotonic() - killed
    for a in rest:
        a.wait_for(r"worker rank \d of 2: 60 steps done", timeout=90)
        assert a.p.wait(30) == 0, "".join(a.lines[-30:])
    log = "".join(proc.lines)
    assert re.search(r"rendezvous job-1: node \S+ dropped: no heartbeat for [\d.]+s \(grace 4s\)", log), log[-3000:]
    assert "rendezvous job-1: round 1 complete with 2 nodes" in log
    assert reformed <= grace + 10, f"training again {reformed:.1f} s after the kill (grace {grace} s)"
    print(f"kill to training again: {reformed:.1f} s (grace {grace} s)")


def test_the_leading_master_killed_during_a_round(procs, master, etcd):
    """Two of the three nodes a run needs have joined when the leading
    master is killed with SIGKILL; the standby takes over the same round
    from etcd, the third node joins it there, and the three train. The
    agents find the new leader through etcd (--rdzv_endpoint etcd://)."""
    leader, _ = master()
    standby, _ = master(wait=False)
    endpoint = "etcd://" + etcd.split("://", 1)[1]
    first = [agent(procs, endpoint, "3:3", 5, grace=6) for _ in range(2)]
    leader.wait_for(r"rendezvous job-1: node \S+ joined round 0 \(2 nodes, 3 to 3 wanted\)", timeout=60)
    leader.p.send_signal(signal.SIGKILL)
    standby.wait_for(r"leading: serving trainers", timeout=30)
    third = agent(procs, endpoint, "3:3", 5, grace=6)
    for a in first + [third]:
        a.wait_for(r"worker rank \d of 3: 5 steps done", timeout=90)
        assert a.p.wait(30) == 0, "".join(a.lines[-30:])
    log = "".join(standby.lines)
    assert re.search(r"rendezvous job-1: node \S+ joined round 0 \(3 nodes, 3 to 3 wanted\)", log), log[-3000:]
    assert "rendezvous job-1: round 0 complete with 3 nodes: it has the most nodes" in log


def test_a_node_joining_mid_job_is_admitted_at_the_next_round(procs, master):
    """Two agents of a job of 2 to 3 nodes train; a third agent starts
    mid-job: it waits, the two restart their workers, and the next round
    has the three, which finish together."""
    proc, addr = master()
    first = [agent(procs, addr, "2:3", 40) for _ in range(2)]
    for a in first:
        a.wait_for(r"worker rank \d of 2: pid", timeout=60)
    third = agent(procs, addr, "2:3", 40)
    for a in first + [third]:
        a.wait_for(r"worker rank \d of 3: 40 steps done", timeout=90)
        assert a.p.wait(30) == 0, "".join(a.lines[-30:])
    log = "".join(proc.lines)
    assert re.search(r"rendezvous job-1: node \S+ waits for round 1", log), log[-3000:]
    assert "rendezvous job-1: round 1 complete with 3 nodes: it has the most nodes" in log


def test_the_readme_elastic_example_runs_as_given(tmp_path, master):
    text = (ROOT / "README.md").read_text()
    section = text.split("### Elastic: torchrun's agents meet at the master", 1)[1].split("\n## ", 1)[0]
    block = section.split("\n\n    ", 1)[1].split("\n\n", 1)[0]
    lines = [line.strip() for line in ("    " + block).replace("\\\n", " ").splitlines()]
    master_line, data, launch = lines
    proc, addr = readme_master(master, master_line)

    def local(command: str) -> str:
        for old, new in {"127.0.0.1:8082": addr, "/tmp/": f"{tmp_path}/", "bin/recordio": f"{BIN}/recordio",
                         "/usr/bin/python3": sys.executable}.items():
            command = command.replace(old, new)
        return command

    subprocess.run(["sh", "-c", local(data)], cwd=ROOT, check=True, timeout=30)
    done = subprocess.run(["sh", "-c", local(launch)], cwd=ROOT, capture_output=True, text=True, timeout=240)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert len(re.findall(r"rank \d: w 3\.00, b 1\.00", out)) == 2, out[-3000:]
    assert "rendezvous elastic-1: round 0 complete with 2 nodes" in "".join(proc.lines)


def test_hostile_joins_are_refused_with_their_reasons(master):
    """A run ID past its bound, and a node claiming a live node's name
    under another token, are refused with the master's reasons; the run
    goes on."""
    import pytest
    from torch.distributed.elastic.rendezvous import RendezvousError

    from trainmaster.rendezvous import MasterRendezvousHandler

    _, addr = master()
    too_long = MasterRendezvousHandler("r" * 200, addr, 1, 2, join_timeout=10)
    with pytest.raises(RendezvousError, match="bad rendezvous join: a run ID takes 1 to 128 bytes; got 200"):
        too_long.next_rendezvous()
    honest = MasterRendezvousHandler("job-h", addr, 1, 2, last_call=0, node="node-a", join_timeout=10)
    store, rank, world = honest.next_rendezvous()
    assert (rank, world) == (0, 1)
    impostor = MasterRendezvousHandler("job-h", addr, 1, 2, last_call=0, node="node-a", join_timeout=10)
    with pytest.raises(RendezvousError, match="node held by another agent: node node-a is in the run under another token"):
        impostor.next_rendezvous()
    assert honest.num_nodes_waiting() == 0 and not honest.is_closed()
    assert honest.shutdown()
