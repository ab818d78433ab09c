"""The benchmark workloads, built identically for both tools.

A trial, for both: a fresh working directory, one shell command `echo hello-I > out.txt`, one
check that out.txt holds `hello-I`.

  proctor     a generated suite (`cli-bench.yaml`) with one task per trial (`repeat` is capped
              at 100, so trials are tasks), each with `solution: [the command]` and
              `assert: [file_contains]`, run with `--agent oracle` on the local backend
  Inspect AI  `inspect_task.py` (copied next to it): one sample per trial, `mockllm/model`,
              `sandbox="local"`, a solver running the command via `sandbox().exec`, a scorer
              reading the file via `sandbox().read_file`

Both get the same concurrency C (proctor `--concurrency C`; Inspect `--max-samples C
--max-subprocesses C`, see docs/benchmarks.md for why not `--max-sandboxes`), no terminal, and
their quietest display (proctor `-q`, Inspect `--display none`); both write their full results
to disk (proctor's run directory; Inspect's .eval log).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PROCTOR = REPO / ".venv" / "bin" / "proctor"
OWN_PEER_VENV = BENCH / ".venv-peer"  # bench/run installs Inspect AI here once
# ./setup.sh's .venv holds Inspect AI too (proctor's `inspect` extra): the peer when bench/run
# has not installed its own.
PEER_VENV = (REPO / ".venv" if not (OWN_PEER_VENV / "bin" / "inspect").exists()
             and (REPO / ".venv" / "bin" / "inspect").exists() else OWN_PEER_VENV)
INSPECT = PEER_VENV / "bin" / "inspect"


def command(i: int) -> str:
    return f"echo hello-{i} > out.txt"


def proctor_suite(root: Path, trials: int) -> Path:
    """A directory holding a suite of `trials` one-command tasks."""
    root.mkdir(parents=True, exist_ok=True)
    lines = ["cli: sh", "tasks:"]
    for i in range(trials):
        lines += [
            f"  - id: t{i:05d}",
            "    intent: Write the file.",
            f'    solution: ["{command(i)}"]',
            f"    assert: [{{file_contains: {{path: out.txt, text: hello-{i}}}}}]",
        ]
    (root / "cli-bench.yaml").write_text("\n".join(lines) + "\n")
    return root


# The agent loop: a model calling a tool TURNS times per trial --------------------------------

AGENT_TURNS = 10


def agent_command(j: int) -> str:
    return f"echo step-{j} >> log.txt"


def agent_suite(root: Path, trials: int, turns: int = AGENT_TURNS) -> Path:
    """`trials` tasks whose `solution` is `turns` commands: `--model mock/solver` calls the
    run_command tool once per command, one per turn, then answers (`turns` + 1 model calls),
    as Inspect's side does (inspect_task.py@agent_loop); the check reads the last line back."""
    root.mkdir(parents=True, exist_ok=True)
    solution = ", ".join(f'"{agent_command(j)}"' for j in range(turns))
    lines = ["cli: sh", "tasks:"]
    for i in range(trials):
        lines += [f"  - id: t{i:05d}", "    intent: Write the log.",
                  f"    max_turns: {turns + 1}", f"    solution: [{solution}]",
                  f"    assert: [{{file_contains: {{path: log.txt, text: step-{turns - 1}}}}}]"]
    (root / "agent-bench.yaml").write_text("\n".join(lines) + "\n")
    return root


def proctor_agent_argv(suite: Path, concurrency: int, out: Path) -> list[str]:
    return [str(PROCTOR), "run", str(suite), "--model", "mock/solver", "--concurrency",
            str(concurrency), "--output-dir", str(out), "-q"]


def inspect_agent_argv(trials: int, concurrency: int, out: Path,
                       turns: int = AGENT_TURNS) -> list[str]:
    return [str(INSPECT), "eval", "inspect_task.py@agent_loop", "--model", "mockllm/model",
            "-T", f"trials={trials}", "-T", f"turns={turns}", "--max-samples", str(concurrency),
            "--max-subprocesses", str(concurrency), "--log-dir", str(out), "--display", "none"]


def inspect_dir(root: Path) -> Path:
    """A directory holding the Inspect AI task file (Inspect wants a relative task path)."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(BENCH / "inspect_task.py", root / "inspect_task.py")
    return root


def proctor_argv(suite: Path, concurrency: int, out: Path) -> list[str]:
    return [str(PROCTOR), "run", str(suite), "--agent", "oracle", "--concurrency",
            str(concurrency), "--output-dir", str(out), "-q"]


def inspect_argv(trials: int, concurrency: int, out: Path) -> list[str]:
    return [str(INSPECT), "eval", "inspect_task.py@write_file", "--model", "mockllm/model",
            "-T", f"trials={trials}", "--max-samples", str(concurrency),
            "--max-subprocesses", str(concurrency), "--log-dir", str(out),
            "--display", "none"]


# Workload 4: checks at scale ----------------------------------------------------------------

AGENT_COMMANDS = (
    "git status", "ls -la src/", "cat src/module_{i}.py", "grep -rn 'def handler' src/",
    "python -m pytest tests/test_{i}.py -q", "sed -n '1,40p' README.md",
    "git diff --stat", "find . -name '*.py' | head", "echo step {i}", "git add -A",
)


def agent_commands(n: int) -> list[str]:
    """`n` commands like an agent's, none of them a commit or a push."""
    return [AGENT_COMMANDS[i % len(AGENT_COMMANDS)].format(i=i) for i in range(n)]


def assertions(n: int) -> list[str]:
    """`n` suite assertions (YAML flow items) cycling through five kinds: ran / not_ran /
    run_count that pass, a not_ran that fails (1,000 hits to list) and a ran that fails (the
    message lists the commands). Every one scans all the commands."""
    kinds = (
        "{{ran: 'cat src/module_{i}\\.py'}}",
        "{{not_ran: 'git (commit|push).*{k}|rm -rf /'}}",
        "{{run_count: {{pattern: '^git ', min: 1000, max: 4000}}}}",
        "{{not_ran: '^git add'}}",
        "{{ran: 'make release-{k}'}}",
    )
    return [kinds[k % len(kinds)].format(k=k, i=k * 10 + 2) for k in range(n)]


def checks_suite(root: Path, n_assertions: int) -> Path:
    """One task with `n_assertions` ran / not_ran / run_count assertions."""
    root.mkdir(parents=True, exist_ok=True)
    items = "\n".join(f"      - {a}" for a in assertions(n_assertions))
    (root / "cli-bench.yaml").write_text(
        f"cli: sh\ntasks:\n  - id: many\n    intent: Do a lot.\n    assert:\n{items}\n")
    return root


def run_in_process(trials: int, concurrency: int) -> float:
    """`proctor run` of a `trials`-task suite (`--agent oracle`, quiet) by calling its CLI in
    this process, with `proctor` imported from sys.path as it stands (an A/B's other tree
    first); the run's wall time."""
    from proctor import cli

    with tempfile.TemporaryDirectory(prefix="proctor-bench-") as tmp:
        suite = proctor_suite(Path(tmp) / "suite", trials)
        sys.argv = ["proctor", "run", str(suite), "--agent", "oracle", "--concurrency",
                    str(concurrency), "--output-dir", f"{tmp}/out", "-q"]
        started = time.perf_counter()
        try:
            cli.main()
        except SystemExit as e:
            if e.code:
                raise
        return time.perf_counter() - started


# The docker backend at the engine's floor (issue 37, item 4) --------------------------------
#
# proctor's trial on `--backend docker` next to the bare engine doing the same work, both
# whole processes: a trivial trial (one command writing a file, one check reading it) vs
# `docker run --rm IMAGE sh -c 'echo ok > /tmp/out.txt && grep -q ok /tmp/out.txt'`; and a
# Harbor task's trial (solution, then the verifier writing a reward) vs the sequence a
# harness without proctor's recording would run: `docker run -d`, `docker cp` the solution,
# `docker exec` it, `docker cp` the tests, `docker exec` them, `docker cp` the reward out,
# `docker rm -f`.

DOCKER_FLOOR_CHECK = "echo ok > /tmp/out.txt && grep -q ok /tmp/out.txt"


def docker_suite(root: Path, trials: int) -> Path:
    """A scenario of `trials` replicas: `echo ok > out.txt`, checked by file_content."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "docker-bench.yaml").write_text(
        "version: 1\nid: trivial\ntask: {prompt: x}\nagent: {type: oracle}\n"
        'solution: ["echo ok > out.txt"]\n'
        "invariants:\n  ok: {description: x, check: {type: file_content, path: out.txt, "
        f"contains: ok}}}}\nparallelism: {{replicas: {trials}}}\n")
    return root / "docker-bench.yaml"


def docker_proctor_argv(spec: Path, out: Path) -> list[str]:
    return [str(PROCTOR), "run", str(spec), "--backend", "docker", "--concurrency", "1",
            "--output-dir", str(out), "-q"]


def docker_floor_argv(image: str, trials: int) -> list[str]:
    """`trials` × `docker run --rm IMAGE sh -c …`, one after another."""
    one = f"docker run --rm {image} sh -c '{DOCKER_FLOOR_CHECK}' || exit 1"
    return ["sh", "-c", "; ".join([one] * trials)]


def harbor_task(root: Path, image: str) -> Path:
    """A Harbor task on `image`: its solution writes a file, its verifier a reward of 1."""
    d = root / "harbor-floor"
    (d / "tests").mkdir(parents=True, exist_ok=True)
    (d / "solution").mkdir(exist_ok=True)
    (d / "task.toml").write_text(f'version = "1.0"\n[environment]\ndocker_image = "{image}"\n')
    (d / "instruction.md").write_text("Write done.\n")
    (d / "solution" / "solve.sh").write_text("echo done > /tmp/done\n")
    (d / "tests" / "test.sh").write_text(
        "[ -f /tmp/done ] && echo 1 > /logs/verifier/reward.txt\n")
    return d


def harbor_proctor_argv(task: Path, out: Path) -> list[str]:
    return [str(PROCTOR), "run", str(task), "--agent", "oracle", "--backend", "docker",
            "--concurrency", "1", "--output-dir", str(out), "-q"]


def harbor_floor_argv(task: Path, image: str) -> list[str]:
    """The bare engine's sequence for one Harbor trial; exits 0 only with a reward of 1."""
    script = (
        f"set -e; c=$(docker run -d --label proctor.bench=floor --init --network none {image} "
        "sleep 2147483647); "
        'trap \'docker rm -f "$c" > /dev/null\' EXIT; '
        f'docker cp {task}/solution "$c":/solution; '
        'docker exec "$c" bash /solution/solve.sh; '
        f'docker cp {task}/tests "$c":/tests; '
        "docker exec \"$c\" sh -c 'mkdir -p /logs/verifier && bash /tests/test.sh'; "
        'test "$(docker cp "$c":/logs/verifier/reward.txt - | tar -xO)" = 1')
    return ["sh", "-c", script]
