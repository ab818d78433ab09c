"""What a container per trial costs (issue 16); figures in docs/benchmarks.md.

    python bench/docker_overhead.py sandbox [N]         # N × (create -> first command -> closed), docker and local
    python bench/docker_overhead.py trials [N [CONC]]   # `proctor run` of N trivial trials, docker vs local
                                                        # (and Inspect AI's docker sandbox, if bench/.venv-peer has it)
    python bench/docker_overhead.py engine [N [IMAGE]]  # the bare engine: network + container + exec + removal

`sandbox` uses the backends themselves (DockerBackend / LocalBackend, isolated), so the figure
is what a trial pays: container made with its mounts and limits, a first `exec`, container
removed and its directories deleted. `trials` runs the real CLI with the oracle agent on a
one-check scenario; where `bench/run` has installed Inspect AI (bench/.venv-peer), the same
N samples through Inspect's docker sandbox (bench/inspect_task.py, a compose file naming
proctor's base image, no network), or the reason Inspect gives for not running them. `engine` is the earlier probe of the engine alone (a two-megabyte image
of this host's `sh` and libc, or a local IMAGE), kept for comparison.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

PROBE = "proctor-bench-probe:1"
FILES = ["/bin/sh", "/bin/sleep", "/bin/true", "/lib/x86_64-linux-gnu/libc.so.6",
         "/lib64/ld-linux-x86-64.so.2"]
PROCTOR = str(Path(sys.executable).parent / "proctor")
BENCH = Path(__file__).resolve().parent
SPEC = """\
version: 1
id: trivial{n}
task: {{prompt: x}}
agent: {{type: oracle}}
solution: ["echo ok > out.txt"]
invariants:
  ok: {{description: x, check: {{type: file_content, path: out.txt, contains: ok}}}}
parallelism: {{replicas: {replicas}}}
"""


def _report(label: str, values: list[float]) -> None:
    print(f"{label}: median {statistics.median(values) * 1000:.0f} ms, "
          f"max {max(values) * 1000:.0f} ms over {len(values)}")


# -- sandbox: the backends' own lifecycle ----------------------------------------------

async def _lifecycles(backend: str, n: int) -> list[tuple[float, float]]:
    from proctor.sandbox import create_sandbox
    from proctor.sandbox.base import SandboxSpec

    out = []
    with tempfile.TemporaryDirectory(prefix="proctor-bench-") as tmp:
        for i in range(n):
            spec = SandboxSpec(trial_id=f"b{i}", root=Path(tmp) / f"b{i}",
                               env={"PROCTOR_RUN_ID": "bench"})
            start = time.perf_counter()
            sb = await create_sandbox(backend, spec)
            await sb.exec("true", timeout=30)
            first = time.perf_counter() - start
            await sb.close()
            out.append((first, time.perf_counter() - start))
    return out


def sandbox(n: int) -> None:
    from proctor.sandbox.docker.images import ensure_base

    ensure_base()
    for backend in ("docker", "local"):
        runs = asyncio.run(_lifecycles(backend, n))
        _report(f"{backend}: create -> first command", [r[0] for r in runs])
        _report(f"{backend}: create -> first command -> closed", [r[1] for r in runs])


# -- trials: the real CLI ----------------------------------------------------------------

def trials(n: int, concurrency: int) -> None:
    with tempfile.TemporaryDirectory(prefix="proctor-bench-") as tmp:
        specs = []
        for k in range(0, n, 100):
            path = Path(tmp) / f"s{k}.yaml"
            path.write_text(SPEC.format(n=k, replicas=min(100, n - k)))
            specs.append(str(path))
        for backend in ("docker", "local"):
            out = Path(tmp) / f"run-{backend}"
            start = time.perf_counter()
            done = subprocess.run([PROCTOR, "run", *specs, "--backend", backend, "--concurrency",
                                   str(concurrency), "--output-dir", str(out), "-q"],
                                  capture_output=True, text=True)
            wall = time.perf_counter() - start
            summary = json.loads((out / "results.json").read_text())["summary"]
            print(f"{backend}: {n} trials at concurrency {concurrency}: {wall:.1f} s wall "
                  f"({wall / n * 1000:.0f} ms/trial), passed {summary['passed']}, "
                  f"errors {summary.get('errored', summary.get('errors'))}, exit {done.returncode}")
        inspect_docker(n, concurrency, Path(tmp))


def inspect_docker(n: int, concurrency: int, tmp: Path) -> None:
    """The same trials as Inspect AI samples in its docker sandbox, from proctor's base image."""
    inspect = BENCH / ".venv-peer" / "bin" / "inspect"
    if not inspect.exists():
        print("inspect-ai docker: not measured (no bench/.venv-peer: `bench/run` installs it)")
        return
    from proctor.sandbox.docker.images import ensure_base

    compose = tmp / "compose.yaml"
    compose.write_text(f"services:\n  default:\n    image: {ensure_base()}\n    x-local: true\n"
                       "    init: true\n    network_mode: none\n    working_dir: /root\n"
                       "    command: sleep infinity\n")
    shutil.copy(BENCH / "inspect_task.py", tmp / "inspect_task.py")  # Inspect wants it relative
    start = time.perf_counter()
    done = subprocess.run([str(inspect), "eval", "inspect_task.py@write_file", "--model",
                           "mockllm/model", "-T", f"trials={n}", "-T", f"compose={compose}",
                           "--max-samples", str(concurrency), "--display", "plain", "--log-dir",
                           str(tmp / "inspect-logs")], capture_output=True, text=True, cwd=tmp)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        out = done.stderr + done.stdout
        why = " ".join(out[out.find("ERROR"):].split()[:40]) if "ERROR" in out else out[-300:]
        print(f"inspect-ai docker: did not run (exit {done.returncode}): {why}")
        return
    print(f"inspect-ai docker: {n} samples at --max-samples {concurrency}: {wall:.1f} s wall "
          f"({wall / n * 1000:.0f} ms/sample)")


# -- engine: the bare engine, as measured before the backend existed ----------------------

def docker(*args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(["docker", *args], input=stdin, capture_output=True, check=True)
    return done.stdout.decode().strip()


def build_probe() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for f in FILES:
            dest = Path(tmp) / f.lstrip("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(Path(f).resolve().read_bytes())
            dest.chmod(0o755)
        tar = subprocess.run(["tar", "-C", tmp, "-c", "."], capture_output=True, check=True)
    docker("import", "-", PROBE, stdin=tar.stdout)


def one_trial(image: str) -> tuple[float, float]:
    name = f"proctor-bench-{uuid.uuid4().hex[:12]}"
    start = time.perf_counter()
    docker("network", "create", "--label", "proctor.bench=1", name)
    box = docker("run", "-d", "--rm", "--label", "proctor.bench=1", "--network", name,
                 image, "/bin/sleep", "3600")
    docker("exec", box, "/bin/true")
    first = time.perf_counter() - start
    docker("rm", "-f", box)
    docker("network", "rm", name)
    return first, time.perf_counter() - start


def engine(n: int, image: str) -> None:
    if image == PROBE:
        build_probe()
    runs = [one_trial(image) for _ in range(n)]
    _report("create -> first command", [r[0] for r in runs])
    _report("create -> first command -> removed", [r[1] for r in runs])
    if image == PROBE:
        docker("image", "rm", PROBE)


def main() -> None:
    args = sys.argv[1:] or ["sandbox"]
    mode, rest = args[0], args[1:]
    if mode == "sandbox":
        sandbox(int(rest[0]) if rest else 20)
    elif mode == "trials":
        trials(int(rest[0]) if rest else 100, int(rest[1]) if len(rest) > 1 else 8)
    elif mode == "engine":
        engine(int(rest[0]) if rest else 20, rest[1] if len(rest) > 1 else PROBE)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
