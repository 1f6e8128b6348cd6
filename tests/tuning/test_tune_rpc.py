"""`tune -t llvm --rpc`: candidates built here, timed on two RPC servers of a TVM tracker on
127.0.0.1 (started here, from the apache-tvm wheel); one server is killed mid-run and every
candidate of a fixed list (the block's whole legal space) is still measured and recorded once."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import onnx
import pytest
from conftest import run_cli

import fusion.tuning.rpc as rpc_mod
import models
from schedules.targets import parse_target
from fusion.tuning.db import point_id
from fusion.tuning.space import SpaceOptions, build_space, default_tile
from schedules.workload import DwSepWorkload

KEY = "megafuse-test"
WL = DwSepWorkload(1, 16, 16, 4, 4)   # 9 legal tiles on llvm: the fixed candidate list


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(args, log):
    return subprocess.Popen([sys.executable, "-m", *args], stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "TVM_NUM_THREADS": "1"}, start_new_session=True)


@pytest.fixture
def farm(tmp_path):
    """A tracker and two servers; yields (tracker port, {server port: process})."""
    procs = []
    log = open(tmp_path / "farm.log", "w")
    try:
        tp = _free_port()
        procs.append(_spawn(["tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port", str(tp),
                             "--port-end", str(tp + 1)], log))
        servers = {}
        for _ in range(2):
            sp = _free_port()
            servers[sp] = _spawn(["tvm.exec.rpc_server", "--tracker", f"127.0.0.1:{tp}", "--key", KEY,
                                  "--host", "127.0.0.1", "--port", str(sp), "--port-end", str(sp + 1)], log)
            procs.append(servers[sp])
        cfg = rpc_mod.RpcConfig("127.0.0.1", tp, KEY)
        deadline = time.monotonic() + 60
        while True:
            try:
                if rpc_mod.servers(cfg) == 2:
                    break
            except Exception:  # noqa: BLE001 - the tracker is still starting
                pass
            assert time.monotonic() < deadline, (tmp_path / "farm.log").read_text()[-2000:]
            time.sleep(0.3)
        yield tp, servers
    finally:
        for p in procs:   # each in its own session: its group is what it started
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
        log.close()


@pytest.mark.slow   # in CI (bin/test); left out of the quick local subset
def test_rpc_sweep_survives_a_dead_server(capsys, farm, tmp_path, monkeypatch):
    tp, servers = farm
    victim_port = next(iter(servers))
    victim = servers[victim_port]
    calls = {"n": 0, "killed": None}
    real = rpc_mod.time_remote

    def time_remote(sess, server, wl, lib, settings, seed):
        calls["n"] += 1
        if calls["killed"] is None and calls["n"] >= 3 and server.endswith(f":{victim_port}"):
            os.killpg(victim.pid, signal.SIGKILL)   # the server and its session process: the candidate in flight
            victim.wait(timeout=10)
            calls["killed"] = os.path.basename(lib)[:-3]
        return real(sess, server, wl, lib, settings, seed)

    monkeypatch.setattr(rpc_mod, "time_remote", time_remote)
    model = tmp_path / "tiny.onnx"
    onnx.save(models.dwsep_block(16, 16, 4), model)
    db = tmp_path / "rpc.jsonl"
    code, out, err = run_cli(capsys, "tune", str(model), "-t", "llvm", "--rpc", f"127.0.0.1:{tp}", "--rpc-key", KEY,
                             "--db", str(db), "--trials", "100", "--quiet", "--workers", "2")
    assert code == 0, err
    assert calls["killed"] is not None, "the victim server never got a candidate after the second"
    tgt = parse_target("llvm")
    space = build_space(WL, tgt.soc, "llvm", SpaceOptions(cores=(0,), engines=("vector",)))
    expected = {point_id(t) for t in space.legal_tiles()} | {point_id(default_tile(WL, tgt))}
    recs = [json.loads(line) for line in db.read_text().splitlines()]
    points = [r["point"] for r in recs]
    assert sorted(points) == sorted(set(points)) and set(points) == expected      # each exactly once
    assert all(r["latency_us"] is not None and r["latency_us"] > 0 and not r.get("error") for r in recs)
    assert all(r["measured_on"].startswith("rpc:127.0.0.1:") for r in recs)
    killed = next(r for r in recs if r["point"] == calls["killed"])
    assert not killed["measured_on"].endswith(f":{victim_port}")     # measured elsewhere
    assert f"candidate {calls['killed'][:10]}" in out and "measured again on another session" in out
    assert "measured on the RPC servers" in out


@pytest.mark.parametrize("argv,msg", [
    (("--rpc", "nohost"), "expected HOST:PORT"),
    (("--rpc", "127.0.0.1:1"), "--rpc-key KEY go together"),
    (("--rpc", "127.0.0.1:1", "--rpc-key", "k", "-t", "sim"), "applies to -t llvm"),
    (("--rpc", f"127.0.0.1:{_free_port()}", "--rpc-key", "k", "-t", "llvm"), "cannot reach the RPC tracker"),
])
def test_rpc_refusals(capsys, tmp_path, argv, msg):
    model = tmp_path / "tiny.onnx"
    onnx.save(models.dwsep_block(16, 16, 4), model)
    code, _, err = run_cli(capsys, "tune", str(model), "--no-db", *argv)
    assert code == 2 and err.count("\n") == 1 and msg in err
