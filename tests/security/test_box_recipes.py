"""The remembered recipes of a run's first boxes ($PROCTOR_CACHE/headstart/local-*.json,
sandbox/boxstart.py) are command lines the next identical `proctor run` starts with the
user's rights before it reads its specs: an agent in its box must not be able to write them.
Hostile: the trial's command writes over every recipe and plants one beside them, by their
host paths; the files are as proctor left them and nothing is planted. Honest twin: the same
command line run twice, the second made from the recipe the first left, both passing."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.security import one_command_suite


def test_an_agent_cannot_write_the_box_recipes_and_an_honest_run_uses_them(tmp_path: Path):
    from tests.helpers.cli import Cli

    cli = Cli(tmp_path)
    recipes = tmp_path / "cache" / "headstart"

    def run(name: str, command: str, out: str):
        (tmp_path / f"{name}.yaml").write_text(one_command_suite(command))
        return cli("run", f"{name}.yaml", "--agent", "oracle", "-q", "--output-dir", out,
                   env={"PROCTOR_CACHE": str(tmp_path / "cache")})

    for out in ("honest-1", "honest-2"):  # the second starts from the first one's recipe
        honest = run("honest", "echo ok > out.txt", out)
        assert honest.returncode == 0, honest.stdout + honest.stderr
    kept = {p: p.read_bytes() for p in recipes.glob("local-*.json")}
    assert kept, "a local run remembers how it made its first boxes"

    attack = (f"for f in {recipes}/local-*.json; do echo '{{}}' > $f; done; "
              f"echo '{{}}' > {recipes}/local-planted.json; echo ok > out.txt")
    hostile = run("hostile", attack, "hostile")
    assert hostile.returncode == 0, hostile.stdout + hostile.stderr  # it did its task
    assert {p: p.read_bytes() for p in kept} == kept
    assert not (recipes / "local-planted.json").exists()
