"""Long fault runs, each printing the figure it protects (the tests hold the short versions).

1. ``kill -9`` of the embedded gateway while writers batch and count: every cell acknowledged
   before the kill is there after a restart, every counter is its last acknowledged value (or
   one more: the increment in flight may have committed).
2. Floods at the connection cap (default gateway: 256 connections, 2 workers): ``--silent``
   sockets that connect and say nothing, then ``--stalled`` sockets that each send half a call
   and stop. After each flood a new happybase client connects and is served (its first call's
   milliseconds), the sockets closed to make room are counted, and so is the gateway's
   ``hbase_gateway_connections_evicted_total``.
3. An oversized value: a put announcing ``--oversized-mib`` MiB, streamed at a default gateway,
   is cut off at ``--max-frame-size`` (the bytes the gateway took, its log line), the serving
   worker's peak memory grows by about the bound, and another client goes on.
4. Slow HTTP bodies: ``--slow-clients`` clients announce a 1,000-byte body to ``profiles
   serve`` and send 11 bytes; each gets 408 and its connection closed after the body timeout,
   ``/v1/health`` answers throughout, and the server's open file descriptors return to their
   level before the attack.

    .venv/bin/python bench/faults.py                 # everything: 8 trials, floods, 300 clients
    .venv/bin/python bench/faults.py --only flood oversized   # the gateway's hostile input
"""

from __future__ import annotations

import argparse
import contextlib
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
import urllib.request
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


def cap_floods(directory: Path, silent: int, stalled: int) -> list[dict]:
    """A default gateway (2 workers, 256 connections), then each flood and a newcomer."""
    with EmbeddedGateway(directory, workers=2, metrics_port=0) as gateway:
        kwargs = gateway.connection_kwargs()
        setup = happybase.Connection(**kwargs)
        setup.create_table("t", {"f": {}})
        setup.table("t").put(b"row", {b"f:a": b"1"})
        setup.close()
        half = _half_call()
        results = []
        for kind, count in (("silent", silent), ("half a call each", stalled)):
            evicted_before = _metric(gateway, "hbase_gateway_connections_evicted_total")
            started = time.perf_counter()
            flood = []
            for _ in range(count):
                sock = socket.create_connection((gateway.host, gateway.port))
                flood.append(sock)
                if kind != "silent":
                    with contextlib.suppress(OSError):  # closed to admit a later socket
                        sock.sendall(half)
            opened_s = time.perf_counter() - started
            started = time.perf_counter()
            newcomer = happybase.Connection(timeout=60_000, **kwargs)
            served = newcomer.table("t").row(b"row") == {b"f:a": b"1"}
            first_call_ms = 1000 * (time.perf_counter() - started)
            newcomer.close()
            time.sleep(1.0)
            closed = sum(_closed_by_server(sock) for sock in flood)
            evicted = _metric(gateway, "hbase_gateway_connections_evicted_total") - evicted_before
            for sock in flood:
                sock.close()
            results.append(
                {
                    "kind": kind,
                    "sockets": count,
                    "opened_s": opened_s,
                    "served": served,
                    "first_call_ms": first_call_ms,
                    "closed": closed,
                    "evicted": int(evicted),
                }
            )
            time.sleep(1.0)  # the flood's sockets leave before the next one
    return results


def _put_message(value: bytes) -> bytes:
    """A one-cell ``mutateRows`` of ``value``, as happybase sends it (buffered, binary)."""
    from Hbase_thrift import BatchMutation, Hbase, Mutation
    from thriftpy2.protocol import TBinaryProtocol
    from thriftpy2.thrift import TMessageType
    from thriftpy2.transport import TMemoryBuffer

    buffer = TMemoryBuffer()
    proto = TBinaryProtocol(buffer)
    proto.write_message_begin("mutateRows", TMessageType.CALL, 1)
    mutation = Mutation(column=b"f:a", value=value, isDelete=False)
    Hbase.mutateRows_args(tableName=b"t", rowBatches=[BatchMutation(b"r", [mutation])]).write(proto)
    proto.write_message_end()
    return buffer.getvalue()


def _half_call() -> bytes:
    message = _put_message(b"v" * 64)
    return message[: len(message) // 2]


def _put_head(size: int) -> bytes:
    """The bytes of a one-cell ``mutateRows`` up to its value, announced as ``size`` bytes."""
    marker = b"<the value>"
    message = _put_message(marker)
    at = message.index(marker)
    return message[: at - 4] + struct.pack(">i", size)


def _metric(gateway: EmbeddedGateway, name: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(gateway.metrics_url, timeout=30) as response:
        text = response.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and not sample.labels:
                return sample.value
    raise KeyError(name)


def oversized_value(directory: Path, mib: int) -> dict:
    """A put announcing ``mib`` MiB, streamed at a default gateway of one process."""
    size = mib << 20
    with EmbeddedGateway(directory, workers=1) as gateway:
        client = happybase.Connection(**gateway.connection_kwargs())
        client.create_table("t", {"f": {}})
        peak_before = _peak_rss_mib(gateway.pid)
        head = _put_head(size)
        sock = socket.create_connection((gateway.host, gateway.port), timeout=120)
        started = time.perf_counter()
        sock.sendall(head)
        sent = 0
        zeros = bytes(1 << 20)
        try:
            while sent < size:
                sent += sock.send(zeros[: min(len(zeros), size - sent)])
        except OSError:  # the gateway closed the connection
            pass
        closed = _closed_by_server(sock, timeout_s=60)
        seconds = time.perf_counter() - started
        sock.close()
        client.table("t").put(b"r", {b"f:a": b"1"})
        others_ok = client.table("t").row(b"r") == {b"f:a": b"1"}
        client.close()
        peak_after = _peak_rss_mib(gateway.pid)
        logged = [
            line for line in gateway.log_path.read_text().splitlines() if "--max-frame-size" in line
        ]
    return {
        "mib": mib,
        "sent_mib": sent / (1 << 20),
        "closed": closed,
        "seconds": seconds,
        "peak_before_mib": peak_before,
        "peak_after_mib": peak_after,
        "others_ok": others_ok,
        "log": logged[-1].split(": ", 1)[-1] if logged else "(none)",
    }


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for {pid}")


def _closed_by_server(sock: socket.socket, timeout_s: float = 0.05) -> bool:
    sock.settimeout(timeout_s)
    try:
        while sock.recv(65536):
            pass
        return True
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
    parser.add_argument(
        "--only",
        nargs="+",
        choices=["kill", "flood", "oversized", "slow"],
        default=["kill", "flood", "oversized", "slow"],
        help="the runs to make (default: all)",
    )
    parser.add_argument("--trials", type=int, default=8, help="kill -9 trials")
    parser.add_argument("--writers", type=int, default=4, help="concurrent writers per trial")
    parser.add_argument("--silent", type=int, default=300, help="silent sockets in a flood")
    parser.add_argument("--stalled", type=int, default=500, help="sockets sending half a call")
    parser.add_argument("--oversized-mib", type=int, default=128, help="the value announced")
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
    held = []
    if "kill" in args.only:
        held.append(run_kill_trials(args))
    if "flood" in args.only:
        held.append(run_floods(args))
    if "oversized" in args.only:
        held.append(run_oversized(args))
    if "slow" in args.only:
        held.append(run_slow_bodies(args))
    print(f"\n{'every figure held' if all(held) else 'A FIGURE DID NOT HOLD'}")
    return 0 if all(held) else 1


def run_kill_trials(args: argparse.Namespace) -> bool:
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
    return lost == 0 and all(t["counters_ok"] for t in trials)


def run_floods(args: argparse.Namespace) -> bool:
    floods = cap_floods(args.work_dir / "flood", args.silent, args.stalled)
    print(
        "| flood at the cap (256, 2 workers) | sockets | opened in s | newcomer served "
        "| its first call ms | sockets closed | evicted (metric) |"
    )
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: |")
    for flood in floods:
        print(
            f"| {flood['kind']} | {flood['sockets']} | {flood['opened_s']:.1f} | "
            f"{'yes' if flood['served'] else 'NO'} | {flood['first_call_ms']:.1f} | "
            f"{flood['closed']} | {flood['evicted']} |",
            flush=True,
        )
    print()
    return all(flood["served"] and flood["closed"] >= flood["sockets"] - 256 for flood in floods)


def run_oversized(args: argparse.Namespace) -> bool:
    result = oversized_value(args.work_dir / "oversized", args.oversized_mib)
    print(
        "| value announced | MiB taken before the close | seconds | gateway peak MiB before "
        "/ after | another client | log |"
    )
    print("| ---: | ---: | ---: | --- | --- | --- |")
    print(
        f"| {result['mib']} MiB | {result['sent_mib']:.1f} | {result['seconds']:.1f} | "
        f"{result['peak_before_mib']:.0f} / {result['peak_after_mib']:.0f} | "
        f"{'served' if result['others_ok'] else 'FAILED'} | {result['log']} |\n",
        flush=True,
    )
    return result["closed"] and result["others_ok"] and result["sent_mib"] < result["mib"]


def run_slow_bodies(args: argparse.Namespace) -> bool:
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
    return (
        slow["answered_408"] == slow["clients"]
        and slow["health_ok"]
        and slow["fds_after"] <= slow["fds_before"] + 2
    )


if __name__ == "__main__":
    sys.exit(main())
