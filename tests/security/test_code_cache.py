"""The code cache ($PROCTOR_CACHE/code, proctor/codecache.py) is code the next `proctor`
runs with the user's rights: an agent in its box must not be able to write it. Hostile: the
trial's command writes over every cached file and plants one beside them, by their host
paths; the files are as proctor left them and nothing is planted (with `--isolation none`
the same command plants it: the box is what holds). Honest twin: the run before it, which
writes the cache and passes."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.security import one_command_suite


def test_an_agent_cannot_write_the_code_cache_and_an_honest_run_uses_it(tmp_path: Path):
    from tests.helpers.cli import Cli

    cli = Cli(tmp_path)
    cache = tmp_path / "cache"

    def run(name: str, command: str):
        (tmp_path / f"{name}.yaml").write_text(one_command_suite(command))
        return cli("run", f"{name}.yaml", "--agent", "oracle", "-q", "--output-dir", name,
                   env={"PROCTOR_CACHE": str(cache)})

    first = run("honest", "echo ok > out.txt")
    assert first.returncode == 0, first.stdout + first.stderr
    kept = {p: p.read_bytes() for p in (cache / "code").iterdir()}
    assert kept, "the proctor program keeps its compiled code"

    attack = (f"for f in {cache}/code/*; do echo x > $f; done; echo x > {cache}/code/planted; "
              "echo ok > out.txt")
    hostile = run("hostile", attack)
    assert hostile.returncode == 0, hostile.stdout + hostile.stderr  # it did its task
    assert {p: p.read_bytes() for p in (cache / "code").iterdir()} == kept
    assert not (cache / "code" / "planted").exists()
