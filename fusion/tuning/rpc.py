"""Measured tuning on remote machines: `tune -t llvm --rpc HOST:PORT --rpc-key KEY`.

The candidates are built and checked here (fusion/tuning/evaluators.build_and_check, in the
worker processes, as a local run does); each checked library is then timed on an RPC server
registered with a TVM tracker under KEY (the apache-tvm wheel's `python -m tvm.exec.rpc_tracker`
and `python -m tvm.exec.rpc_server --tracker HOST:PORT --key KEY`; the `rpc` extra installs what
they import: tornado, cloudpickle). One thread per registered server takes candidates from a
shared queue; for each it asks the tracker for a free server, uploads the library, re-checks the
output there and times it with time_evaluator -- the same evaluation as a local run's, so the
records and the database are the same, plus where it ran (`measured_on`).

A server that dies (or a session that fails) mid-candidate gives the candidate back to the queue,
where another thread takes it; a candidate is retried on at most MAX_ATTEMPTS sessions before it
is recorded as failed, and each candidate gets exactly one result, recorded once by the sweep.
"""

from __future__ import annotations

import logging
import os
import queue
import socket
import struct
import threading
import time
from dataclasses import dataclass

from fusion.core.errors import MegafuseError
from fusion.core.sanitize import display
from fusion.tuning import evaluators as ev

log = logging.getLogger("megafuse.tune")
MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class RpcConfig:
    host: str
    port: int
    key: str
    request_timeout_s: float = 60.0   # waiting for a free server (all busy or gone)
    session_timeout_s: float = 120.0  # the server ends a session that runs longer

    @property
    def where(self) -> str:
        return f"{self.key}@{self.host}:{self.port}"


def parse_address(text: str) -> tuple[str, int]:
    """HOST:PORT of a tracker (argparse type); a one-line error otherwise."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535 or any(c.isspace() for c in host):
        raise ValueError(f"expected HOST:PORT of a TVM RPC tracker, got '{display(text, 60)}'")
    return host, int(port)


def _rpc():
    try:
        from tvm import rpc
        from tvm.rpc import base
        import tornado  # noqa: F401  (the tracker protocol's server side; the extra installs both)
    except ImportError:
        raise MegafuseError("tune --rpc needs the rpc extra (tornado, cloudpickle): pip install -e '.[rpc]' "
                            "(bin/setup does)") from None
    return rpc, base


def servers(cfg: RpcConfig) -> int:
    """How many servers the tracker holds under the key (free or in a session)."""
    rpc, _ = _rpc()
    try:
        socket.create_connection((cfg.host, cfg.port), timeout=5).close()   # TVM's own connect retries for 60 s
        summary = rpc.connect_tracker(cfg.host, cfg.port).summary()
    except (OSError, RuntimeError) as e:
        raise MegafuseError(f"cannot reach the RPC tracker at {display(cfg.host)}:{cfg.port}: "
                            f"{display(str(e), 120)}") from None
    return sum(1 for s in summary.get("server_info", []) if str(s.get("key", "")).split(":", 1)[-1] == cfg.key)


def _request(cfg: RpcConfig):
    """(session, "host:port" of its server): one free server of the key, from the tracker."""
    rpc, base = _rpc()
    sock = socket.create_connection((cfg.host, cfg.port), timeout=cfg.request_timeout_s)
    try:
        sock.sendall(struct.pack("<i", base.RPC_TRACKER_MAGIC))
        if struct.unpack("<i", base.recvall(sock, 4))[0] != base.RPC_TRACKER_MAGIC:
            raise RuntimeError("not a TVM RPC tracker")
        base.sendjson(sock, [base.TrackerCode.REQUEST, cfg.key, "", 1])
        value = base.recvjson(sock)
        if value[0] != base.TrackerCode.SUCCESS:
            raise RuntimeError(f"tracker answered {value!s:.80}")
        url, port, matchkey = value[1]
    finally:
        sock.close()
    return rpc.connect(url, port, matchkey, session_timeout=cfg.session_timeout_s), f"{url}:{port}"


def time_remote(sess, server: str, wl, lib: str, settings: ev.MeasureSettings, seed: int) -> dict:
    """Upload one checked library to the session's server, re-check and time it there."""
    sess.upload(lib)
    mod = sess.load_module(os.path.basename(lib))
    r = ev.time_module(mod, sess.cpu(0), wl, settings, seed)
    r["measured_on"] = f"rpc:{server}"
    return r


class RpcMeasurer:
    """Times libraries on the servers of one tracker key, one thread per server."""

    def __init__(self, cfg: RpcConfig, settings: ev.MeasureSettings | None = None, seed: int = 0):
        self.cfg = cfg
        self.settings = settings or ev.MeasureSettings()
        self.seed = seed
        self.n_servers = servers(cfg)
        if self.n_servers < 1:
            raise MegafuseError(f"no RPC server is registered under key '{display(cfg.key)}' with the tracker at "
                                f"{display(cfg.host)}:{cfg.port}")
        self.events: list[str] = []    # failovers, in order (printed by tune)

    @property
    def parallel(self) -> int:
        return self.n_servers

    def measure(self, wl, libs: dict[str, str]) -> dict[str, dict]:
        """pid -> result (latency_us, min_us, check_rel_err, measured_on | error), one per pid."""
        self.n_servers = max(1, servers(self.cfg))   # servers may have joined (or left) since the last batch
        todo: queue.Queue = queue.Queue()
        for pid in libs:
            todo.put(pid)
        results: dict[str, dict] = {}
        attempts = {pid: 0 for pid in libs}
        lock = threading.Lock()

        def worker():
            while True:
                with lock:
                    if len(results) == len(libs):
                        return
                try:
                    pid = todo.get(timeout=0.2)
                except queue.Empty:
                    continue
                with lock:
                    attempts[pid] += 1
                    n = attempts[pid]
                server = "?"
                try:
                    sess, server = _request(self.cfg)
                    r = time_remote(sess, server, wl, libs[pid], self.settings, self.seed)
                    del sess   # ends the session: the server is free for the next request
                except Exception as e:  # noqa: BLE001 - a dead server or a failed session: another try
                    why = f"{type(e).__name__}: {str(e).strip().splitlines()[-1] if str(e).strip() else ''}"[:200]
                    with lock:
                        if n < MAX_ATTEMPTS:
                            self.events.append(f"candidate {pid[:10]} on {server}: measured again on another "
                                               f"session (failed: {why[:100]})")
                            log.info("rpc: %s", self.events[-1])
                            todo.put(pid)
                        else:
                            results[pid] = {"latency_us": None, "error": f"rpc: {MAX_ATTEMPTS} sessions failed; "
                                                                          f"last: {why}"}
                    time.sleep(0.2)
                    continue
                with lock:
                    results[pid] = r

        threads = [threading.Thread(target=worker, daemon=True) for _ in range(min(self.n_servers, len(libs)))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results


__all__ = ["MAX_ATTEMPTS", "RpcConfig", "RpcMeasurer", "parse_address", "servers", "time_remote"]
