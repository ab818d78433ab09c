"""The `proctor` program's start and end (proctor/startup.py): started as the program, the
garbage collector is held off during start-up and the process ends without the
interpreter's teardown; nothing it prints or writes is lost on the way, every exit handler
runs, and the exit code is the command's; the code dataclasses generate is compiled once
(proctor/codecache.py). A host calling `main()` gets none of it.

Each test runs a copy of the console script pip writes (named `proctor`, as installed) in
a fresh interpreter; it says on stderr whether the interpreter was torn down, how many
collections the collector ran, whether it was left on and how much generated code was
compiled.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import proctor

# The console script pip writes for `proctor = "proctor.cli:main"`, and what tells on stderr.
SCRIPT = """#!{python}
import atexit, gc, os, sys
collections = [0]
gc.callbacks.append(lambda phase, info: phase == "start" and collections.__setitem__(0, collections[0] + 1))
class Teardown:
    def __del__(self, write=os.write):  # the module's globals may be gone by then
        write(2, b"torn down\\n")
teardown = Teardown()
def said():
    cache = sys.modules.get("proctor.codecache")
    cache = cache and cache._installed
    compiled = f"compiled {{cache.misses}} of {{cache.hits + cache.misses}}" if cache else "no cache"
    startup = sys.modules.get("proctor.startup")
    kept = sorted(type(o).__name__ for o in startup._to_exit) if startup else []
    os.write(2, f"exit handler: {{collections[0]}} collections, "
                f"gc {{'on' if gc.isenabled() else 'off'}}, {{compiled}}, kept {{kept}}\\n".encode())
    gc.callbacks.clear()  # its function holds this module's globals: they could not go
atexit.register(said)
from proctor.cli import main
if __name__ == '__main__':
    sys.argv[0] = sys.argv[0].removesuffix('.exe')
    sys.exit(main())
"""

SUITE = """cli: sh
tasks:
  - id: t1
    intent: Write the file.
    solution: ["echo hello > out.txt"]
    assert: [{file_contains: {path: out.txt, text: TEXT}}]
"""


def _program(tmp_path: Path, name: str = "proctor") -> Path:
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(SCRIPT.format(python=sys.executable))
    path.chmod(0o755)
    return path


def _run(program: Path, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PROCTOR_HOME=str(tmp_path / "home"),
               PROCTOR_CACHE=str(tmp_path / "cache"),
               PYTHONPATH=str(Path(proctor.__file__).resolve().parents[1]))
    env.pop("PYTHONUNBUFFERED", None)  # stdout a pipe, block-buffered: it must be flushed
    return subprocess.run([str(program), *argv], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)


def _suite(tmp_path: Path, text: str = "hello") -> Path:
    (tmp_path / "suite.yaml").write_text(SUITE.replace("TEXT", text))
    return tmp_path / "suite.yaml"


def test_the_program_ends_without_teardown_and_keeps_everything(tmp_path):
    proc = _run(_program(tmp_path), tmp_path, "run", str(_suite(tmp_path)), "--agent",
                "oracle", "-q", "--output-dir", "out")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("1/1 passed, 0 failed, 0 errored")
    assert proc.stdout.splitlines()[1] == f"run: {tmp_path / 'out'}"
    # every exit handler ran (the script's own last), the interpreter was not torn down
    assert "exit handler:" in proc.stderr and "torn down" not in proc.stderr
    # held during start-up (a trivial run collected ~60 times), let go for the trials
    count = int(proc.stderr.split("exit handler: ")[1].split()[0])
    assert count < 20 and "gc on" in proc.stderr, proc.stderr
    # the run's plan and results were kept to the end, not freed object by object
    assert "kept ['Planned', 'dict']" in proc.stderr, proc.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["summary"]["passed"] == 1
    lines = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["status"] == "pass"
    # the index has the finished run, its connections closed: the log folded into the file
    home = tmp_path / "home"
    assert not (home / "index.sqlite-wal").exists()
    with sqlite3.connect(home / "index.sqlite") as db:
        rows = db.execute("SELECT status, passed FROM runs").fetchall()
    assert rows == [("passed", 1)]


def test_the_program_compiles_the_code_dataclasses_generate_once(tmp_path):
    """proctor/codecache.py: the first run compiles each class's generated methods, the
    next one none (they come from $PROCTOR_CACHE/code)."""
    program, spec = _program(tmp_path), str(_suite(tmp_path))
    first = _run(program, tmp_path, "run", spec, "--agent", "oracle", "-q", "--output-dir", "a")
    again = _run(program, tmp_path, "run", spec, "--agent", "oracle", "-q", "--output-dir", "b")
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    compiled = int(first.stderr.split("compiled ")[1].split()[0])
    assert compiled >= 40, first.stderr  # a trivial run's ~80: model, sandbox, asyncio ...
    assert "compiled 0 of " in again.stderr, again.stderr
    assert list((tmp_path / "cache" / "code").iterdir())


@pytest.mark.parametrize(("text", "spec_ok", "code"), [("nope", True, 1), ("hello", False, 2)])
def test_the_program_exits_with_the_commands_code(tmp_path, text, spec_ok, code):
    spec = _suite(tmp_path, text)
    if not spec_ok:
        spec.write_text(spec.read_text().replace("cli: sh", "cli: sh\nconcurrency: 0"))
    proc = _run(_program(tmp_path), tmp_path, "run", str(spec), "--agent", "oracle", "-q",
                "--output-dir", "out")
    assert proc.returncode == code, proc.stderr
    assert "torn down" not in proc.stderr and "exit handler:" in proc.stderr
    if spec_ok:
        assert proc.stdout.rstrip().endswith("--failed")  # the last line printed
    else:
        assert "concurrency" in proc.stderr


def test_a_usage_error_and_help_end_the_same_way(tmp_path):
    program = _program(tmp_path)
    proc = _run(program, tmp_path, "run", "--no-such-option")
    assert proc.returncode == 2 and "No such option" in proc.stderr
    assert "torn down" not in proc.stderr
    proc = _run(program, tmp_path, "--help")
    assert proc.returncode == 0 and "proctor init my-bench" in proc.stdout
    assert "torn down" not in proc.stderr and "exit handler:" in proc.stderr


def test_a_host_calling_main_keeps_its_collector_and_its_teardown(tmp_path):
    """The same script under another name is a host program: proctor leaves it alone."""
    proc = _run(_program(tmp_path, "host.py"), tmp_path, "run", str(_suite(tmp_path)),
                "--agent", "oracle", "-q", "--output-dir", "out")
    assert proc.returncode == 0, proc.stderr
    assert "torn down" in proc.stderr and "no cache" in proc.stderr and "kept []" in proc.stderr
    count = int(proc.stderr.split("exit handler: ")[1].split()[0])
    assert count >= 20, proc.stderr
    assert json.loads((tmp_path / "out" / "results.json").read_text())["summary"]["passed"] == 1


def test_a_host_calling_a_command_keeps_nothing_to_its_end():
    import weakref

    from proctor import startup

    class Plan:
        pass

    plan, before = Plan(), list(startup._to_exit)
    gone = weakref.ref(plan)
    startup.keep_to_exit(plan)  # pytest is not the proctor program
    del plan
    assert gone() is None and startup._to_exit == before
