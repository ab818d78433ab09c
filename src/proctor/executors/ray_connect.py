"""Reaching the Ray cluster for `--executor ray` (docs/running.md#ray): which address, a
timeout that is an exit-2 error, Ctrl-C and SIGTERM working throughout, Ray's own output
kept off the terminal, and a private local instance when no address is given.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
from typing import Any

from proctor.errors import UsageError
from proctor.model import RunOptions

PRIVATE_OBJECT_STORE = 256 << 20  # the private instance moves traces, not data sets
PRIVATE_MARK = "PROCTOR_PRIVATE_RAY"  # env of a private instance's processes: its proctor's pid


def require_ray() -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        raise UsageError("--executor ray needs Ray: pip install 'proctor[ray]' (or run with "
                         "--executor local)") from None


def settings(options: RunOptions) -> dict[str, Any]:
    cfg = options.config.ray
    address = options.ray_address or cfg.address or os.environ.get("RAY_ADDRESS") or None
    return {"address": address, "connect_timeout_s": cfg.connect_timeout_s,
            "max_retries": cfg.max_retries}


def connect(options: RunOptions) -> bool:
    """Join the cluster (or start a private instance) before anything runs; a cluster that
    does not answer within `connect_timeout_s` is an exit-2 error. True when this process
    started Ray (and so must stop it)."""
    require_ray()
    import ray

    if ray.is_initialized():
        return False
    s = settings(options)
    address, timeout = s["address"], s["connect_timeout_s"]
    _quiet_ray_logs()
    _route_cluster_messages(options.quiet)
    if address is None:
        if not options.quiet:
            print("proctor: no Ray address given (--ray-address, [ray] address, $RAY_ADDRESS): "
                  "starting a private local Ray instance for this run", file=sys.stderr)
        return _start_private(ray)
    with _sigterm_interrupts():
        _probe(address, timeout)
        return _join(ray, address, timeout)


def _start_private(ray: Any) -> bool:
    # In this thread: Ray ties the processes it starts to their thread. Ctrl-C on a terminal
    # signals the whole process group: the private instance's processes are started with
    # SIGINT blocked (they inherit the mask), so they outlive it until the nodes have cleaned
    # up and proctor stops them. A Ctrl-C meanwhile is held, and interrupts proctor as soon
    # as Ray is up.
    sweep_orphaned_instances()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    os.environ[PRIVATE_MARK] = str(os.getpid())  # inherited by every process of the instance
    try:
        _init(ray, {"address": "local", "object_store_memory": PRIVATE_OBJECT_STORE}, None)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.environ.pop(PRIVATE_MARK, None)
    return True


def _join(ray: Any, address: str, timeout: float) -> bool:
    # ray.init cannot be interrupted and may retry for minutes: the main thread waits, so
    # Ctrl-C and SIGTERM still work, and gives up at the timeout.
    outcome: list[BaseException | None] = []

    def attempt() -> None:
        outcome.append(_init(ray, {"address": address}, address, raise_=False))

    thread = threading.Thread(target=attempt, name="proctor-ray-connect", daemon=True)
    with _stderr_off():
        thread.start()
        thread.join(timeout)
    if not outcome:
        raise UsageError(f"could not connect to the Ray cluster at {address} within "
                         f"{timeout:g}s ([ray] connect_timeout_s); is it running?")
    if outcome[0] is not None:
        raise outcome[0]
    return True


@contextlib.contextmanager
def _stderr_off() -> Any:
    """While Ray's client tries an address where something else answers, its C++ code logs
    each failed attempt on stderr ("Failed to connect to GCS ...", "Failed to get cluster
    ID ...") whatever its log level: proctor says what went wrong in one line instead."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


@contextlib.contextmanager
def _sigterm_interrupts() -> Any:
    """SIGTERM while connecting ends proctor as Ctrl-C does: "interrupted", exit 130."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _init(ray: Any, kw: dict[str, Any], address: str | None,
          raise_: bool = True) -> UsageError | None:
    try:
        ray.init(**kw, include_dashboard=False, logging_level="ERROR", log_to_driver=False,
                 configure_logging=True)
        return None
    except Exception as e:  # noqa: BLE001 - Ray raises many kinds; each means "no cluster"
        err = UsageError(f"could not connect to the Ray cluster at {address or 'local'}: "
                         f"{_first_line(e)}")
        if raise_:
            raise err from None
        return err


def sweep_orphaned_instances() -> int:
    """Kill what is left of private instances whose proctor died (SIGKILL): Ray's own agents
    outlive their raylet. Their processes carry PRIVATE_MARK=<proctor pid>."""
    from proctor.proc import environments

    prefix = PRIVATE_MARK.encode() + b"="
    killed = 0
    for pid, env in environments():
        owner = next((v[len(prefix):] for v in env if v.startswith(prefix)), None)
        if owner is None or not owner.isdigit() or os.path.exists(f"/proc/{int(owner)}"):
            continue
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            killed += 1
    return killed


def _probe(address: str, timeout: float) -> None:
    """A TCP connect to host:port first: a wrong address fails in seconds, clearly."""
    if address in ("auto", "local"):
        return
    hostport = address.removeprefix("ray://").rsplit("/", 1)[0]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"Ray address {address!r}: expected host:port, ray://host:port or auto")
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host.strip("[]"), int(port)),
                                     timeout=max(0.1, min(5.0, deadline - time.monotonic()))).close()
            return
        except OSError as e:
            if time.monotonic() >= deadline:
                raise UsageError(f"could not connect to the Ray cluster at {address} within "
                                 f"{timeout:g}s: {e.strerror or e}") from None
            time.sleep(0.5)


def _quiet_ray_logs() -> None:
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    os.environ.setdefault("RAY_LOG_TO_STDERR", "0")
    import logging

    for name in ("ray", "ray._private", "ray.runtime_env"):
        logging.getLogger(name).setLevel(logging.ERROR)


def _route_cluster_messages(quiet: bool) -> None:
    """Ray prints the cluster's error messages (a node died, a worker was killed) on stdout
    as `(raylet) ...` lines, whatever log_to_driver says: under -q they go nowhere, else one
    line each on stderr. (Results say what happened to each trial.)"""
    from ray._private import worker

    if not hasattr(worker, "print_to_stdstream"):
        return

    def show(data: dict[str, Any], ignore_prefix: bool = False) -> None:
        if quiet:
            return
        for line in data.get("lines", [])[:1]:
            first = " ".join(line.strip().splitlines()[0].split())[:300] if line.strip() else ""
            print(f"proctor: ray: {first}", file=sys.stderr)

    worker.print_to_stdstream = show


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else type(e).__name__
