"""The measuring client that runs inside a pane of the benchmark's tmux server.

``GET /v1/self`` identifies the caller by its controlling tty, so the client of the latency
and throughput rows must be a process of a pane.  The benchmark starts this module as the
command of one pane; it connects back to the benchmark over a Unix socket, says who it is, and
then runs jobs (one JSON line in, one JSON line out) until the socket closes.

    python -m bench.client_probe CONTROL_SOCKET
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from bench import httpclient

Job = dict[str, Any]


def _tty_of_self() -> str:
    try:
        return os.ttyname(0)
    except OSError:
        return ""


def job_fetch(job: Job) -> Job:
    conn = httpclient.UnixHTTPConnection(job["socket"])
    try:
        status, headers, body = httpclient.get(conn, job["path"])
    finally:
        conn.close()
    return {
        "status": status,
        "headers": headers,
        "body": body.decode("utf-8", "replace"),
        "length": len(body),
    }


def job_latency(job: Job) -> Job:
    """Keep-alive GETs, round robin over the targets so that drift hits all alike."""
    targets = job["targets"]
    conns = [httpclient.UnixHTTPConnection(t["socket"]) for t in targets]
    out: dict[str, list[float]] = {t["name"]: [] for t in targets}
    statuses: dict[str, list[int]] = {t["name"]: [] for t in targets}
    gap = float(job.get("gap_s", 0.0))
    try:
        for i in range(job["warmup"] + job["n"]):
            for target, conn in zip(targets, conns, strict=True):
                path = target["path"]
                t0 = time.perf_counter()
                conn.request("GET", path)
                resp = conn.getresponse()
                resp.read()
                t1 = time.perf_counter()
                if i >= job["warmup"]:
                    out[target["name"]].append(t1 - t0)
                    if resp.status not in statuses[target["name"]]:
                        statuses[target["name"]].append(resp.status)
                if gap:
                    time.sleep(gap)  # pacing between requests, as a client that works between them
    finally:
        for conn in conns:
            conn.close()
    return {"samples": out, "statuses": statuses}


def job_first(job: Job) -> Job:
    """One GET per new connection (a hook's, a one-shot client's first request), round robin
    over the targets; the connect is timed with it."""
    targets = job["targets"]
    out: dict[str, list[float]] = {t["name"]: [] for t in targets}
    for i in range(job["warmup"] + job["n"]):
        for target in targets:
            t0 = time.perf_counter()
            conn = httpclient.UnixHTTPConnection(target["socket"])
            try:
                conn.request("GET", target["path"])
                resp = conn.getresponse()
                resp.read()
            finally:
                conn.close()
            t1 = time.perf_counter()
            if resp.status != 200:
                raise RuntimeError(f"{target['name']} {target['path']}: HTTP {resp.status}")
            if i >= job["warmup"]:
                out[target["name"]].append(t1 - t0)
    return {"samples": out}


def job_throughput(job: Job) -> Job:
    """Closed-loop keep-alive clients against one target for a while."""
    count, elapsed = asyncio.run(
        httpclient.throughput(job["socket"], job["path"], job["conns"], job["duration"])
    )
    return {"count": count, "elapsed": elapsed}


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _run(argv: list[str]) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:4]} ... failed: {proc.stderr.strip()}")
    return proc.stdout


def job_curl(job: Job) -> Job:
    out: dict[str, list[float]] = {t["name"]: [] for t in job["targets"]}
    for i in range(job["warmup"] + job["n"]):
        for t in job["targets"]:
            argv = [
                "curl",
                "-s",
                "-o",
                os.devnull,
                "-w",
                "%{http_code}",
                "--unix-socket",
                t["socket"],
                f"http://localhost{t['path']}",
            ]
            t0 = time.perf_counter()
            code = _run(argv)
            dt = time.perf_counter() - t0
            if code not in ("200", "204"):
                raise RuntimeError(f"curl {t['path']}: HTTP {code}")
            if i >= job["warmup"]:
                out[t["name"]].append(dt)
    return {"samples": out}


def job_alternatives(job: Job) -> Job:
    """What a client does without the daemon, round robin: display-message, libtmux, and
    the tty-checked three-subprocess read of per-turn context plugins."""
    import libtmux
    from libtmux.pane import Pane

    tmux, server_path, pane, fmt = job["tmux"], job["server"], job["pane"], job["fmt"]
    base = [tmux, "-S", server_path]
    server = libtmux.Server(socket_path=server_path)
    my_pid = str(os.getpid())

    def display() -> None:
        _run([*base, "display-message", "-p", "-t", pane, fmt])

    def lib() -> None:
        p = Pane.from_pane_id(server=server, pane_id=pane)
        assert p.pane_id == pane

    def three() -> None:
        # Which tty am I on, which tty does $TMUX_PANE have, and only if they agree, read it.
        tty = _run(["ps", "-o", "tty=", "-p", my_pid]).strip()
        pane_tty = _run([*base, "display-message", "-p", "-t", pane, "#{pane_tty}"]).strip()
        if pane_tty != f"/dev/{tty}":
            raise RuntimeError(f"tty check failed: {tty!r} vs {pane_tty!r}")
        _run([*base, "display-message", "-p", "-t", pane, fmt])

    fns = {"display": display, "libtmux": lib, "three": three}
    wanted = job.get("which", list(fns))
    out: dict[str, list[float]] = {name: [] for name in wanted}
    for i in range(job["warmup"] + job["n"]):
        for name in wanted:
            dt = _timed(fns[name])
            if i >= job["warmup"]:
                out[name].append(dt)
    return {"samples": out}


JOBS: dict[str, Callable[[Job], Job]] = {
    "fetch": job_fetch,
    "latency": job_latency,
    "first": job_first,
    "throughput": job_throughput,
    "curl": job_curl,
    "alternatives": job_alternatives,
}


def main() -> int:
    control = sys.argv[1]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(control)
    stream = sock.makefile("rwb", buffering=0)
    hello = {"pid": os.getpid(), "tty": _tty_of_self(), "pane": os.environ.get("TMUX_PANE")}
    stream.write(json.dumps(hello).encode() + b"\n")
    for line in stream:
        job = json.loads(line)
        try:
            result = {"ok": True, **JOBS[job["kind"]](job)}
        except Exception:  # noqa: BLE001 - any failure goes back to the benchmark, with its trace
            result = {"ok": False, "error": traceback.format_exc()}
        stream.write(json.dumps(result).encode() + b"\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
