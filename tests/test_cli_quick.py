"""`proctor run` read without click (cliargs.sure_run, cli.py's start): for every command line
it takes, exactly what click gives `run`; every other one it leaves to click. Started as the
`proctor` program, a plain run imports no click, and what a user sees is click's."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from proctor import cliargs
from proctor.cli import main
from tests.helpers.spec import ONE_TASK_SUITE as SUITE


def clicks(args: list[str]) -> dict[str, Any] | None:
    """What click gives `proctor run ARGS`'s body, or None if it refuses the command line."""
    command = main.commands["run"]
    try:
        with command.make_context("run", list(args)) as ctx:
            return dict(ctx.params)
    except (click.ClickException, click.exceptions.Exit):
        return None


def quick(args: list[str]) -> dict[str, Any] | None:
    sure = cliargs.sure_run(["proctor", "run", *args])
    return None if sure is None else {"paths": sure[0], **sure[1]}


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "suite.yaml").write_text(SUITE)
    (tmp_path / "dir").mkdir()
    (tmp_path / "proctor.toml").write_text("")
    return tmp_path


PLAIN = [
    [],
    ["suite.yaml"],
    ["suite.yaml", "dir", "missing.yaml"],
    ["suite.yaml", "--agent", "oracle", "-q"],
    ["suite.yaml", "--agent=oracle", "--agent", "nop", "--quiet", "-q"],
    ["--model", "mock/solver", "suite.yaml", "--concurrency", "4", "--output-dir", "out"],
    ["suite.yaml", "--model", "a/b", "--model=c/d", "--task", "t1", "--category", "x"],
    ["suite.yaml", "--repeat", "3", "--repeat=100", "--concurrency=1024"],
    ["suite.yaml", "--output-dir", "dir", "--format", "junit,md", "--format=html"],
    ["suite.yaml", "--backend", "local", "--isolation", "namespaces", "--executor", "local"],
    ["suite.yaml", "--isolation=none", "--keep", "--output-limit", "1000"],
    ["suite.yaml", "--max-cost", "2.5", "--max-cost=10", "--otlp-endpoint", "http://h:4318"],
    ["suite.yaml", "--config", "proctor.toml", "--resume", "latest", "--retry-errors", "infra"],
    ["suite.yaml", "--agent-command", "my-agent --task {{prompt}}", "--ray-address", "auto"],
]


@pytest.mark.parametrize("args", PLAIN)
def test_a_plain_command_line_is_read_as_click_reads_it(places, args):
    assert quick(args) is not None, args
    assert quick(args) == clicks(args)


UNSURE = [
    ["--help"], ["suite.yaml", "-h"], ["--", "suite.yaml"], ["-"], ["suite.yaml", "-qq"],
    ["--agent"], ["--agent", "nobody"], ["--agent="], ["--keep=1"], ["--qiet"], ["-Z"],
    ["--repeat", "0"], ["--repeat", "101"], ["--repeat", "007"], ["--repeat", "+3"],
    ["--repeat", " 3"], ["--repeat", "1_0"], ["--concurrency", "-1"], ["--max-cost", "0"],
    ["--max-cost", "1e3"], ["--max-cost", "nan"], ["--max-cost", ".5"], ["--output-limit", "999"],
    ["--output-dir", "suite.yaml"], ["--config", "dir"], ["--model", "-q"], ["--model", ""],
    ["--format", "bogus"], ["--format", "json,bogus"], ["--isolation", "AUTO"],
    ["suite.yaml", "--agent", "oracle", "--output-dir"],
]


@pytest.mark.parametrize("args", UNSURE)
def test_anything_unusual_is_left_to_click(places, args):
    assert quick(args) is None, args


def test_another_command_or_shell_completion_is_left_to_click(places, monkeypatch):
    assert cliargs.sure_run(["proctor"]) is None
    assert cliargs.sure_run(["proctor", "validate", "suite.yaml"]) is None
    assert cliargs.sure_run(["proctor", "--help", "run"]) is None
    assert cliargs.sure_run(["proctor", "run", "suite.yaml"]) is not None
    monkeypatch.setenv("_PROCTOR_COMPLETE", "bash_complete")
    assert cliargs.sure_run(["proctor", "run", "suite.yaml"]) is None


def test_many_command_lines_are_read_as_click_reads_them_or_left_to_it(places):
    """Command lines made at random of every option, its spellings and values good and bad."""
    values: dict[str, list[str]] = {
        "agents": ["oracle", "nop", "llm", "orcle", ""], "backend": ["local", "docker", "x"],
        "isolation": ["auto", "none", "namespaces", "Auto"], "executor": ["local", "ray", "z"],
        "repeat": ["1", "5", "100", "0", "101", "05", "x", "-3"],
        "concurrency": ["1", "4", "1024", "1025", "2.0"],
        "output_limit": ["1000", "999", "5000000", "1e6"],
        "max_cost": ["0.5", "3", "0", "0.0", "-1", "1e2", "inf", "12.25"],
        "output_dir": ["out", "dir", "suite.yaml", "a/b"],
        "config_path": ["proctor.toml", "dir", "none.toml"],
        "formats": ["json", "md,junit", "html,", "bogus", "json, md"],
    }
    names = [(names, dest, spec) for names, dest, spec in cliargs.RUN_OPTIONS]
    rng = random.Random(37)
    taken = 0
    for _ in range(3000):
        args: list[str] = []
        for _ in range(rng.randrange(0, 7)):
            roll = rng.random()
            if roll < 0.2:
                args.append(rng.choice(["suite.yaml", "dir", "missing.yaml", "-", "--", "-x"]))
                continue
            opts, dest, spec = rng.choice(names)
            opt = rng.choice(opts)
            if spec.get("is_flag"):
                args.append(opt if rng.random() < 0.9 else opt + "=1")
                continue
            value = rng.choice(values.get(dest, ["v", "a b", "x=y", "-v", ""]))
            if opt.startswith("--") and rng.random() < 0.4:
                args.append(f"{opt}={value}")
            elif rng.random() < 0.97:
                args += [opt, value]
            else:
                args.append(opt)  # its value missing (or the next option taken for it)
        got = quick(args)
        if got is not None:
            taken += 1
            assert got == clicks(args), args
    assert taken > 300, taken  # the test says something


def _program(tmp_path: Path) -> Path:
    """The console script pip writes, named `proctor`, that also lists, at exit, the
    modules it imported."""
    script = tmp_path / "bin" / "proctor"
    script.parent.mkdir()
    script.write_text(
        f"#!{sys.executable}\nimport atexit, json, sys\n"
        f"atexit.register(lambda: json.dump(list(sys.modules), open({str(tmp_path / 'mods')!r}, 'w')))\n"
        "from proctor.cli import main\n"
        "if __name__ == '__main__':\n"
        "    sys.argv[0] = sys.argv[0].removesuffix('.exe')\n"
        "    sys.exit(main())\n")
    script.chmod(0o755)
    return script


def _run(tmp_path: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    env = {**os.environ, "PROCTOR_NO_HEADSTART": "1"}
    proc = subprocess.run([str(_program(tmp_path)), *argv], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    mods = tmp_path / "mods"
    return proc, json.loads(mods.read_text()) if mods.exists() else []


def test_the_program_runs_a_plain_command_line_without_click(places):
    proc, modules = _run(places, "run", "suite.yaml", "--agent", "oracle", "-q",
                         "--output-dir", "out")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((places / "out" / "results.json").read_text())["summary"]["passed"] == 1
    assert "click" not in modules and "proctor.run.main" in modules


@pytest.mark.parametrize("argv, code, said", [
    (("--format", "bogus"), 2, "Usage: proctor run [OPTIONS] [PATHS]...\nTry 'proctor run "
     "--help' for help.\n\nError: Invalid value: unknown format 'bogus' (valid: json, junit, "
     "md, html, atif, inspect, otel)\n"),
    (("--retry-errors", "infra"), 2,
     "proctor: --retry-errors re-runs a stored run's errors: give --resume RUN_DIR\n"),
    (("--repeat", "0"), 2, "Usage: proctor run [OPTIONS] [PATHS]...\nTry 'proctor run --help'"
     " for help.\n\nError: Invalid value for '--repeat': 0 is not in the range 1<=x<=100.\n"),
])
def test_what_the_program_says_is_clicks(places, argv, code, said):
    proc, _ = _run(places, "run", "suite.yaml", "--agent", "oracle", "-q", *argv)
    assert (proc.returncode, proc.stderr) == (code, said)


def test_what_escapes_the_run_is_handled_as_clicks_main_handles_it(places, monkeypatch, capsys):
    """EOFError or KeyboardInterrupt out of the body: "Aborted!" and exit 1, as under click;
    anything else is raised."""
    from click.testing import CliRunner

    from proctor import cli
    from proctor.run import main as run_main

    def stop(*args: object) -> None:
        raise EOFError
    monkeypatch.setattr(run_main, "run_main", stop)
    under_click = CliRunner().invoke(main, ["run", "suite.yaml", "--agent", "oracle", "-q"])
    assert (under_click.exit_code, under_click.stderr) == (1, "\nAborted!\n")
    with pytest.raises(SystemExit) as out:
        cli._as_click_would(EOFError())
    assert (out.value.code, capsys.readouterr().err) == (1, "\nAborted!\n")
    with pytest.raises(RuntimeError, match="inner"):
        cli._as_click_would(RuntimeError("inner"))
