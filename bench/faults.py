"""Long fault runs, each printing the figure it protects (the tests hold the short versions).

1. ``kill -9`` of the embedded gateway while writers batch and count: every cell acknowledged
   before the kill is there after a restart, every counter is its last acknowledged value (or
   one more: the increment in flight may have committed).
2. An idle-socket flood of ``--flood-factor`` times the gateway's connection cap: a client
   connected before the flood keeps being answered, the excess sockets are closed at once,
   and a new client connects once the flood is gone.
3. Slow HTTP bodies: ``--slow-clients`` clients announce a 1,000-byte body to ``profiles
   serve`` and send 11 bytes; each gets 408 and its connection closed after the body timeout,
   ``/v1/health`` answers throughout, and the server's open file descriptors return to their
   level before the attack.

    .venv/bin/python bench/faults.py                 # 8 trials, flood 5x, 300 slow clients
    .venv/bin/python bench/faults.py --trials 2 --slow-clients 50   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import happybase
import httpx
import numpy as np

from profile_store.audiences.sketch_table import ensure_table as ensure_sketch_table
from profile_store.hbase_gateway.process import EmbeddedGateway

ROWS_PER_BATCH = 25
API_KEY = "bench-faults-key-0123456789"


def kill_trial(directory: Path, seed: int, writers: int) -> dict:
    """One trial: writers batch until a random moment, the gateway is killed, then checked."""
    gateway = EmbeddedGateway(directory).start()
    kwargs = gateway.connection_kwargs()
    setup = happybase.Connection(**kwargs)
    setup.create_table("t", {"cf": {}})
    setup.close()
    acked_rows: list[list[bytes]] = [[] for _ in range(writers)]
    acked_counts: list[list[int]] = [[] for _ in range(writers)]

    def write(worker: int) -> None:
        table = happybase.Connection(**kwargs).table("t")
        batch_no = 0
        try:
            while True:
                keys = [b"w%d-%07d-%02d" % (worker, batch_no, i) for i in range(ROWS_PER_BATCH)]
                with table.batch() as batch:
                    for key in keys:
                        batch.put(key, {b"cf:a": key, b"cf:b": key[::-1]})
                acked_rows[worker].extend(keys)
                acked_counts[worker].append(table.counter_inc(b"counter", b"cf:w%d" % worker))
                batch_no += 1
        except Exception:  # killed mid-call: that call was never acknowledged
            return

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    time.sleep(np.random.default_rng(seed).uniform(1.0, 4.0))
    gateway.kill()
    for thread in threads:
        thread.join(timeout=60)

    with EmbeddedGateway(directory) as restarted:
        table = happybase.Connection(**restarted.connection_kwargs()).table("t")
        stored = dict(table.scan(columns=[b"cf:a", b"cf:b"]))
        counters = table.row(b"counter")
    lost = sum(
        stored.get(key) != {b"cf:a": key, b"cf:b": key[::-1]} for rows in acked_rows for key in rows
    )
    counters_ok = all(
        not counts
        or struct.unpack(">q", counters[b"cf:w%d" % w])[0] in (counts[-1], counts[-1] + 1)
        for w, counts in enumerate(acked_counts)
    )
    return {
        "acked_cells": 2 * sum(len(rows) for rows in acked_rows),
        "lost_cells": 2 * lost,
        "counters_ok": counters_ok,
    }


def idle_flood(directory: Path, cap: int, factor: int) -> dict:
    """A canary client, then ``factor * cap`` idle sockets; the canary must keep working."""
    args = ("--max-connections", str(cap))
    with EmbeddedGateway(directory, server_args=args) as gateway:
        kwargs = gateway.connection_kwargs()
        canary = happybase.Connection(**kwargs)
        canary.create_table("t", {"cf": {}})
        table = canary.table("t")
        table.put(b"row", {b"cf:a": b"1"})
        flood = [
            socket.create_connection((gateway.host, gateway.port)) for _ in range(cap * factor)
        ]
        time.sleep(1.0)
        closed = sum(_closed_by_server(sock) for sock in flood)
        latencies, errors = [], 0
        for _ in range(500):
            start = time.perf_counter()
            try:
                assert table.row(b"row") == {b"cf:a": b"1"}
                latencies.append(time.perf_counter() - start)
            except Exception:
                errors += 1
        for sock in flood:
            sock.close()
        time.sleep(1.0)
        newcomer = happybase.Connection(**kwargs)
        new_client_ok = newcomer.table("t").row(b"row") == {b"cf:a": b"1"}
        newcomer.close()
        canary.close()
    return {
        "sockets": len(flood),
        "closed_at_once": closed,
        "canary_errors": errors,
        "canary_p99_ms": 1000 * float(np.percentile(latencies, 99)) if latencies else None,
        "new_client_ok": new_client_ok,
    }


def _closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(0.05)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def slow_bodies(directory: Path, clients: int, timeout_s: int) -> dict:
    """``clients`` partial bodies against a real ``profiles serve`` process."""
    tenants = directory / "tenants.json"
    tenants.write_text(
        json.dumps({"tenants": [{"name": "bench", "api_keys": [API_KEY], "app_ids": ["com.shop"]}]})
    )
    with EmbeddedGateway(directory / "hbase") as gateway:  # a store a daily run has written
        connection = happybase.Connection(**gateway.connection_kwargs())
        ensure_sketch_table(connection)
        connection.close()
    log_path = directory / "serve.log"
    command = [sys.executable, "-m", "profile_store.cli", "serve", "--port", "0"]
    command += ["--tenants", str(tenants), "--hbase-data-dir", str(directory / "hbase")]
    env = dict(os.environ, PROFILES_HTTP_BODY_TIMEOUT_SECONDS=str(timeout_s))
    with open(log_path, "wb") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        url = _wait_for_url(log_path, server)
        host, port = url.removeprefix("http://").split(":")
        httpx.get(f"{url}/v1/health", timeout=30)
        fds_before = _open_fds(server.pid)
        head = (
            "POST /v1/audiences/estimate HTTP/1.1\r\n"
            f"Host: {host}\r\nX-API-Key: {API_KEY}\r\nContent-Type: application/json\r\n"
            "Content-Length: 1000\r\n\r\n"
        ).encode()

        def attack(_: int) -> tuple[bool, float]:
            sock = socket.create_connection((host, int(port)), timeout=timeout_s + 30)
            start = time.perf_counter()
            sock.sendall(head + b'{"app_id": ')
            received = sock.recv(4096)
            answered = time.perf_counter() - start
            while chunk := sock.recv(4096):  # then the server closes the connection
                received += chunk
            sock.close()
            return received.startswith(b"HTTP/1.1 408 "), answered, time.perf_counter() - start

        health_ok = []
        with ThreadPoolExecutor(max_workers=min(clients, 256)) as pool:
            answers = pool.map(attack, range(clients))
            for _ in range(5):
                time.sleep(timeout_s / 5)
                health = httpx.get(f"{url}/v1/health", timeout=30)
                health_ok.append(health.status_code == 200)
                if health.status_code != 200:
                    print(f"  health during the attack: {health.status_code} {health.text[:200]}")
            answers = list(answers)
        time.sleep(1.0)
        fds_after = _open_fds(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=30)
    held = [seconds for ok, seconds, _ in answers if ok]
    closed = [seconds for ok, _, seconds in answers if ok]
    return {
        "clients": clients,
        "answered_408": len(held),
        "median_s": statistics.median(held) if held else None,
        "max_s": max(held) if held else None,
        "closed_max_s": max(closed) if closed else None,
        "health_ok": all(health_ok),
        "fds_before": fds_before,
        "fds_after": fds_after,
    }


def _wait_for_url(log_path: Path, process: subprocess.Popen) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        match = re.search(r"Uvicorn running on (http://\S+)", log_path.read_text())
        if match:
            return match.group(1)
        if process.poll() is not None:
            raise RuntimeError(f"serve exited:\n{log_path.read_text()}")
        time.sleep(0.1)
    raise RuntimeError(f"serve did not start:\n{log_path.read_text()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8, help="kill -9 trials")
    parser.add_argument("--writers", type=int, default=4, help="concurrent writers per trial")
    parser.add_argument("--cap", type=int, default=32, help="gateway --max-connections")
    parser.add_argument("--flood-factor", type=int, default=5, help="idle sockets: factor x cap")
    parser.add_argument("--slow-clients", type=int, default=300)
    parser.add_argument("--body-timeout", type=int, default=5, help="seconds")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work-dir", type=Path, default=Path("data/bench-faults"))
    args = parser.parse_args()
    shutil.rmtree(args.work_dir, ignore_errors=True)
    args.work_dir.mkdir(parents=True)
    print(
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}\n"
    )

    print("| kill -9 trial | acknowledged cells | lost | counters |")
    print("| ---: | ---: | ---: | --- |")
    trials = []
    for trial in range(args.trials):
        result = kill_trial(args.work_dir / f"kill-{trial}", args.seed + trial, args.writers)
        trials.append(result)
        print(
            f"| {trial + 1} | {result['acked_cells']:,} | {result['lost_cells']} | "
            f"{'exact' if result['counters_ok'] else 'WRONG'} |",
            flush=True,
        )
    acked = sum(t["acked_cells"] for t in trials)
    lost = sum(t["lost_cells"] for t in trials)
    print(f"\n{args.trials} trials: {acked:,} acknowledged cells, {lost} lost\n")

    flood = idle_flood(args.work_dir / "flood", args.cap, args.flood_factor)
    print("| idle flood | sockets | closed at once | canary errors | canary p99 ms | new client |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    print(
        f"| cap {args.cap} | {flood['sockets']} | {flood['closed_at_once']} | "
        f"{flood['canary_errors']} | {flood['canary_p99_ms']:.1f} | "
        f"{'ok' if flood['new_client_ok'] else 'FAILED'} |\n",
        flush=True,
    )

    slow = slow_bodies(args.work_dir, args.slow_clients, args.body_timeout)
    print(
        "| slow bodies | answered 408 | 408 after, median s | max s | closed by, max s "
        "| health | fds before / after |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | --- | --- |")
    print(
        f"| {slow['clients']} | {slow['answered_408']} | {slow['median_s']:.1f} | "
        f"{slow['max_s']:.1f} | {slow['closed_max_s']:.1f} | "
        f"{'ok' if slow['health_ok'] else 'FAILED'} | "
        f"{slow['fds_before']} / {slow['fds_after']} |"
    )

    passed = (
        lost == 0
        and all(t["counters_ok"] for t in trials)
        and flood["canary_errors"] == 0
        and flood["new_client_ok"]
        and slow["answered_408"] == slow["clients"]
        and slow["health_ok"]
        and slow["fds_after"] <= slow["fds_before"] + 2
    )
    print(f"\n{'every figure held' if passed else 'A FIGURE DID NOT HOLD'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
