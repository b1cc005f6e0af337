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
from collections import Counter
from pathlib import Path
from typing import Callable, Dict, List, Optional

from conftest import BIN, ROOT, assert_trained_once, json_lines, readme_master, wait_until, write_points
from trainmaster import wire

WORKER = str(Path(__file__).parent / "rdzv_worker.py")


def agent(procs, addr: str, nnodes: str, steps: int, run_id: str = "job-1", grace: int = 4):
    """An agent of one node running rdzv_worker.py for steps steps."""
    return elastic_agent(procs, addr, nnodes, [WORKER, "--steps", str(steps)], run_id=run_id, grace=grace)


def elastic_agent(procs, addr: str, nnodes: str, worker: List[str], *, run_id: str, grace: int, last_call: int = 1):
    """python -m trainmaster.run: an agent of one node with one worker,
    which restarts it up to 5 times."""
    env = {"PYTHONPATH": str(ROOT / "python"), "OMP_NUM_THREADS": "1", "LOGLEVEL": "INFO"}
    return procs(sys.executable, "-m", "trainmaster.run", "--nnodes", nnodes, "--nproc_per_node", "1",
                 "--max_restarts", "5", "--monitor_interval", "0.5", "--rdzv_backend", "trainmaster",
                 "--rdzv_endpoint", addr, "--rdzv_id", run_id, "--rdzv_conf", f"last_call={last_call},grace={grace}",
                 *worker, env=env)


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
    # The handler's default grace: after the failover an agent may back
    # off for up to 5 s between its calls (Calls.max_backoff), so a grace
    # of a few seconds may drop it from the round the standby restored.
    first = [agent(procs, endpoint, "3:3", 5, grace=15) for _ in range(2)]
    leader.wait_for(r"rendezvous job-1: node \S+ joined round 0 \(2 nodes, 3 to 3 wanted\)", timeout=60)
    leader.p.send_signal(signal.SIGKILL)
    standby.wait_for(r"leading: serving trainers", timeout=30)
    third = agent(procs, endpoint, "3:3", 5, grace=15)
    for a in first + [third]:
        try:
            a.wait_for(r"worker rank \d of 3: 5 steps done", timeout=90)
        except AssertionError as e:
            raise AssertionError(f"{e}\nthe agents:\n" + "\n--\n".join("".join(b.lines[-25:]) for b in first + [third]) +
                                 "\nthe dead leader:\n" + "".join(leader.lines[-15:]) +
                                 "\nthe standby:\n" + "".join(standby.lines[-40:])) from None
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
    """Two agents train the checkpoint example; rank 1 crashes at step 200,
    the agents restart the workers, which resume from step 160."""
    text = (ROOT / "README.md").read_text()
    section = text.split("### Elastic: torchrun's agents meet at the master", 1)[1].split("\n## ", 1)[0]
    block = section.split("\n\n    ", 1)[1].split("\n\n", 1)[0]
    lines = [line.strip() for line in ("    " + block).replace("\\\n", " ").splitlines()]
    rm, master_line, data, launch = lines
    assert rm.startswith("rm -rf ") and "--crash-at 200" in launch and "--checkpoints" in launch
    proc, addr = readme_master(master, master_line)

    def local(command: str) -> str:
        for old, new in {"127.0.0.1:8082": addr, "/tmp/": f"{tmp_path}/", "bin/recordio": f"{BIN}/recordio",
                         "/usr/bin/python3": sys.executable}.items():
            command = command.replace(old, new)
        return command

    for command in (rm, data):
        subprocess.run(["sh", "-c", local(command)], cwd=ROOT, check=True, timeout=30)
    done = subprocess.run(["sh", "-c", local(launch)], cwd=ROOT, capture_output=True, text=True, timeout=240)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    resumed = re.findall(r"rank (\d): resumed from step 160 \(checkpoint (\d+)\) in epoch 1, 2 ranks", out)
    assert sorted(r for r, _ in resumed) == ["0", "1"] and resumed[0][1] == resumed[1][1], out[-3000:]
    assert len(re.findall(r"rank \d: epoch 1 \(pass 1\): 154 steps over its share of 4904 records", out)) == 2, out
    assert len(re.findall(r"rank \d: w 3\.00, b 1\.00", out)) == 2, out[-3000:]
    log = "".join(proc.lines)
    assert "rendezvous elastic-1: round 0 complete with 2 nodes" in log
    assert "rendezvous elastic-1: round 1 complete with 2 nodes" in log
    assert len(re.findall("rewound to checkpoint", log)) == 1
    assert f"resumed from step 160 (checkpoint {resumed[0][1]}) in epoch 1, 2 ranks" in section


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


def test_a_run_closed_begins_anew_once_its_nodes_are_gone(master):
    """A job that ended closed its run; the same run ID is refused while a
    node of it may still call, and begins anew at the next round once
    every node is silent past the grace: a job started again under the
    same --rdzv_id runs."""
    from torch.distributed.elastic.rendezvous import RendezvousClosedError

    from trainmaster.rendezvous import MasterRendezvousHandler

    proc, addr = master()
    first = MasterRendezvousHandler("job-again", addr, 1, 1, last_call=0, grace=3, join_timeout=10)
    assert first.next_rendezvous()[1:] == (0, 1)
    assert first.shutdown()

    def join_again():
        again = MasterRendezvousHandler("job-again", addr, 1, 1, last_call=0, grace=3, join_timeout=10)
        try:
            return again, again.next_rendezvous()
        except RendezvousClosedError:
            return None

    refused = join_again()
    assert refused is None, "joined a run closed less than its grace ago"
    again, (_, rank, world) = wait_until("the closed run begun anew", join_again, 10)
    assert (rank, world) == (0, 1)
    proc.wait_for(r"rendezvous job-again: begins anew at round 1: it was closed \d+s ago \(by node \S+: the agent "
                  r"shut down\), and none of its nodes calls any more")
    assert again.shutdown()


# The elastic DDP job: tests/ddp_checkpoint_rank.py --elastic under three,
# then two, then three agents.
RANK = str(Path(__file__).parent / "ddp_checkpoint_rank.py")
RECORDS, BATCH, EPOCHS, EVERY = 6_000, 16, 2, 40
GRACE, LAST_CALL = 4, 3


def worker_starts(out: Path) -> Dict[str, Dict[int, List[dict]]]:
    """Every start of the workers (a job, named by its rank 0): its ranks'
    lines."""
    starts: Dict[str, Dict[int, List[dict]]] = {}
    for path in out.glob("job*-rank*.jsonl"):
        job, rank = re.fullmatch(r"job(\w+)-rank(\d+)\.jsonl", path.name).groups()
        starts.setdefault(job, {})[int(rank)] = json_lines(path)
    return starts


def started(out: Path, world: int, after: Callable[[List[dict]], bool]) -> Optional[str]:
    """The job of world ranks whose rank 0's lines satisfy after, if any."""
    for job, ranks in worker_starts(out).items():
        lines = ranks.get(0, [])
        if lines and lines[0]["world"] == world and after(lines):
            return job
    return None


def checkpointed_past_its_start(lines: List[dict], steps: int) -> bool:
    """A rank that took a checkpoint of its own, and trained steps past it."""
    start = next((line["from"]["gstep"] for line in lines if "from" in line), 0)
    ours = [line["checkpoint"] for line in lines if line.get("checkpoint", 0) > start]
    return bool(ours) and max((line.get("gstep", 0) for line in lines), default=0) >= ours[0] + steps


def test_an_elastic_job_loses_a_node_and_the_master_takes_one_in_and_trains_every_record_once(
        tmp_path, procs, master, etcd):
    """Three agents of a job of 2 to 3 nodes train 2 epochs of DDP
    (tests/ddp_checkpoint_rank.py --elastic: checkpoints every 40 steps,
    kept by rank 0 as latest.pt). Mid-epoch, the node of rank 0 dies (its
    agent and worker SIGKILLed); while the two others meet for round 1, the
    leading master is SIGKILLed, and the standby completes the round; the
    two train, resumed from latest.pt. Once they took a checkpoint of their
    own, a fourth agent starts: round 2 takes it in, and the three resume
    and finish. Following the final model back through the checkpoints it
    was resumed from, every record was trained exactly once in each epoch."""
    flags = ["-passes", str(EPOCHS), "-chunks-per-task", "10"]
    leader, _ = master(*flags)
    standby, _ = master(*flags, wait=False)
    standby.wait_for(r"standing by")
    out, checkpoints = tmp_path / "out", tmp_path / "checkpoints"
    out.mkdir()
    checkpoints.mkdir()
    data = write_points(tmp_path, RECORDS, 5)
    worker = [RANK, "--endpoints", etcd, "--data", data, "--out", str(out), "--elastic", str(checkpoints),
              "--epochs", str(EPOCHS), "--batch", str(BATCH), "--workers", "1", "--every", str(EVERY),
              "--step-delay", "0.05", "--timeout", "300"]
    endpoint = "etcd://" + etcd.split("://", 1)[1]

    def start_agent():
        return elastic_agent(procs, endpoint, "2:3", worker, run_id="elastic-job", grace=GRACE, last_call=LAST_CALL)

    agents = [start_agent() for _ in range(3)]
    per_epoch = wire.group_batches(RECORDS, 3, BATCH)

    # Mid-epoch 0, past the checkpoint of step 40: the node of rank 0 dies.
    first = wait_until("job of 3 ranks past step 50", lambda: started(
        out, 3, lambda lines: max((line.get("gstep", 0) for line in lines), default=0) >= EVERY + 10), 120)
    head = json_lines(out / f"job{first}-rank0.jsonl")[0]
    victim = next(a for a in agents if a.p.pid == head["agent"])
    for pid in (head["agent"], head["pid"]):
        os.kill(pid, signal.SIGKILL)
    killed = time.time()
    survivors = [a for a in agents if a is not victim]

    # The leading master dies during round 1, which the standby completes.
    leader.wait_for(r"rendezvous elastic-job: node \S+ joined round 1", timeout=60)
    leader.p.send_signal(signal.SIGKILL)
    standby.wait_for(r"leading: serving trainers", timeout=30)
    second = wait_until("job of 2 ranks past a checkpoint of its own", lambda: started(
        out, 2, lambda lines: checkpointed_past_its_start(lines, 5)), 120)

    # A fourth node joins: admitted at round 2, where the three finish.
    agents = survivors + [start_agent()]
    for a in agents:
        assert a.p.wait(240) == 0, "".join(a.lines[-40:])

    starts = worker_starts(out)
    finished = [job for job in starts if (out / f"job{job}-rank0.json").exists()]
    assert len(finished) == 1, finished
    trained = {e: Counter() for e in range(EPOCHS)}
    job, upto, chain = finished[0], None, []
    while job is not None:  # from the final model back to the job that began it
        ranks = starts[job]
        world = ranks[0][0]["world"]
        assert sorted(ranks) == list(range(world)), f"job {job}: ranks {sorted(ranks)} of {world}"
        froms = [next((line["from"] for line in lines if "from" in line), None) for lines in ranks.values()]
        assert all(f == froms[0] for f in froms), froms
        for lines in ranks.values():
            for line in lines:
                if "ids" in line and (upto is None or line["gstep"] <= upto):
                    trained[line["epoch"]].update(line["ids"])
        chain.append((job, world, upto))
        job, upto = (froms[0]["job"], froms[0]["gstep"]) if froms[0] else (None, None)
    chain.reverse()
    assert [job for job, _, _ in chain] == [first, second, finished[0]], chain
    assert [world for _, world, _ in chain] == [3, 2, 3], chain
    died_at = max(line.get("gstep", 0) for lines in starts[first].values() for line in lines)
    assert EVERY < died_at < per_epoch, f"the node died at step {died_at}, not mid-epoch 0 ({per_epoch} steps)"
    log = "".join(leader.lines) + "".join(standby.lines)
    assert_trained_once(trained, RECORDS, f"jobs {chain}\n{log[-4000:]}")

    # The rounds, and who held them.
    leader_log, standby_log = "".join(leader.lines), "".join(standby.lines)
    assert "round 1 complete" not in leader_log, "round 1 completed before the leader was killed"
    assert "rendezvous elastic-job: round 1 complete with 2 nodes" in standby_log, standby_log[-3000:]
    assert "rendezvous elastic-job: round 2 complete with 3 nodes: it has the most nodes" in standby_log
    assert re.search(r"rendezvous elastic-job: node \S+ dropped: no heartbeat", log), log[-3000:]
    resumed = sum(1 for ranks in starts.values() if any("from" in line for line in ranks[0]))
    assert len(re.findall("rewound to checkpoint", log)) == resumed, log[-3000:]
    losses = [line["loss"] for line in starts[finished[0]][0] if "ids" in line]
    assert sum(losses[-5:]) / 5 < 0.001, losses[-5:]
    again = min(line["t"] for line in starts[second][0] if "ids" in line)
    print(f"node killed to training again on 2 nodes, through a failover of the master: {again - killed:.1f} s")
