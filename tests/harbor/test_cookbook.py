"""The Harbor cookbook's recipes, unchanged (../shared/corpora/harbor-cookbook, Apache-2.0):
every recipe that can run on one machine without a hosted service runs — its oracle passes
and a do-nothing agent fails (`proctor check`) — and the one that cannot says why.
docs/harbor.md#the-harbor-cookbook-here lists them. The machine reaches nothing but the
package registries: images come from the image map, the verifiers' downloads through the
egress proxy and proctor's installer substitutes."""

from __future__ import annotations

import pytest

from tests.docker.engine import require_engine
from tests.helpers.cli import Cli, results, run_dir_of
from tests.helpers.harbor import corpus, public_addresses

pytestmark = [pytest.mark.slow]

RUNNABLE = ["simple-task", "multi-container", "mcp-tools", "multi-reward", "multi-step",
            "dns-blacklisting", "skills", "simulated-user", "computer-use-ubuntu"]
HOSTED = {"computer-use-windows": "DAYTONA_API_KEY"}  # its desktop is a hosted sandbox
# The cookbook's release: unpinned dependencies resolve as of then (docs/harbor.md).
ERA = {"UV_EXCLUDE_NEWER": "2026-03-27T00:00:00Z"}


@pytest.fixture(scope="module")
def recipes() -> object:
    require_engine()
    return corpus("harbor-cookbook") / "recipes"


@pytest.fixture
def cli(cli: Cli, tmp_path) -> Cli:
    # A shared CI machine is slower than the cookbook's authors': timeouts times 3. Its
    # registries may sit behind a gateway at a reserved address: named as public.
    (tmp_path / "proctor.toml").write_text('pass_env = ["UV_EXCLUDE_NEWER"]\ntimeout_multiplier = 3\n'
                                           f'public_addresses = {public_addresses()!r}\n')
    return cli


def test_every_recipe_that_can_run_here_passes_with_its_oracle_and_fails_doing_nothing(
        recipes, cli):
    assert sorted(RUNNABLE + list(HOSTED)) == sorted(p.name for p in recipes.iterdir()
                                                     if (p / "task.toml").is_file())
    proc = cli("check", *[str(recipes / r) for r in RUNNABLE], "--concurrency", "2",
               env=ERA, timeout=3600)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith(f"ok: {len(RUNNABLE)} task(s) checked with oracle and nop")


def test_a_recipe_that_needs_a_hosted_service_says_why(recipes, cli, monkeypatch):
    for name, key in HOSTED.items():
        monkeypatch.delenv(key, raising=False)
        proc = cli("run", str(recipes / name), "--agent", "oracle", "-q", timeout=600)
        (trial,) = results(run_dir_of(proc))["trials"]
        assert trial["status"] == "error"
        assert trial["error"].startswith(f"this task cannot run here: environment variable "
                                         f"{key} not set")


def test_a_real_agent_on_a_recipe(recipes, cli, tmp_path):
    """The built-in agent, driven by proctor's scripted model, solves simple-task the way a
    model would: by running a command in the task's container."""
    (tmp_path / "solver.yaml").write_text(
        "turns:\n  - run: \"echo 'Hello, world!' > hello.txt\"\n  - say: done\n")
    proc = cli("run", str(recipes / "simple-task"), "--model", "mock/solver.yaml", "-q",
               env=ERA, timeout=900)
    (trial,) = results(run_dir_of(proc))["trials"]
    assert trial["status"] == "pass", trial
    assert trial["turns"] == 2 and trial["agent"] == "llm"
    trace = (run_dir_of(proc) / "trials" / trial["id"] / "trace.jsonl").read_text()
    assert "model_call" in trace and "echo 'Hello, world!' > hello.txt" in trace
