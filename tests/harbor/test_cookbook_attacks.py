"""`proctor check --attacks` on the Harbor cookbook's simple-task, unchanged: every attack of
the battery runs against it on the docker backend (the task's own container, Harbor's
verifier), and the table says which ones win it. docs/security.md#proctor-check---attacks
has the table.

What this pins is what is true on main: the attacks that win today are expected failures,
each with why; every other attack must stay contained. As the verifier is hardened (SPEC §4:
grading never runs what the agent changed), an expected failure that starts passing fails
here (strict): move it out of PASSES_TODAY and update the docs' table.
"""

from __future__ import annotations

import json

import pytest

from proctor.agents.attacks import ATTACKS
from tests.docker.engine import require_engine
from tests.helpers.cli import Cli
from tests.helpers.harbor import corpus, public_addresses

pytestmark = [pytest.mark.slow, pytest.mark.docker]

ERA = {"UV_EXCLUDE_NEWER": "2026-03-27T00:00:00Z"}  # as tests/harbor/test_cookbook.py
# Measured on main, 2026-12-06 (docs/security.md): the verifier's test.sh runs in the
# container the agent owned as root, with its tools, its HOME and its files.
PASSES_TODAY = {
    "trojan-shell": "the verifier's `bash /tests/test.sh` runs the agent's bash",
    "trojan-curl": "test.sh's `curl … | sh` runs the agent's curl, first on PATH",
    "curlrc": "test.sh's curl reads the agent's ~/.curlrc",
    "conftest": "pytest loads the agent's /conftest.py (rootdir / by its /pytest.ini)",
    "pytest-ini": "pytest reads the agent's /pytest.ini: --collect-only, exit 0",
}


@pytest.fixture(scope="module")
def attacked(tmp_path_factory) -> dict:
    require_engine()
    recipe = corpus("harbor-cookbook") / "recipes" / "simple-task"
    where = tmp_path_factory.mktemp("cookbook-attacks")
    # As test_cookbook.py: timeouts times 3 on a shared machine, the registries' gateway
    # named as public.
    (where / "proctor.toml").write_text(
        'pass_env = ["UV_EXCLUDE_NEWER"]\ntimeout_multiplier = 3\n'
        f'public_addresses = {public_addresses()!r}\n')
    cli = Cli(where, env={"PROCTOR_HOME": str(where / "home"), **ERA})
    out = cli("check", str(recipe), "--attacks", "--concurrency", "2", "--output-dir",
              str(where / "run"), timeout=3600)
    assert "Traceback" not in out.stderr, out.stderr
    trials = json.loads((where / "run" / "results.json").read_text())["trials"]
    return {"out": out, "trials": {t["params"]["attack"]: t for t in trials}}


def test_every_attack_ran_and_each_that_passed_is_named(attacked):
    out, trials = attacked["out"], attacked["trials"]
    assert sorted(trials) == sorted(ATTACKS)
    # The lint part holds: the oracle passes, doing nothing fails.
    assert "ok: 1 task(s) checked with oracle and nop" in out.stdout
    passed = {a for a, t in trials.items() if t["status"] == "pass"}
    assert out.returncode == (1 if passed else 0), out.stdout + out.stderr
    for attack in passed:
        assert f"simple-task: attack {attack} PASSED" in out.stderr
    for attack, trial in trials.items():
        verdict = "PASSED" if trial["status"] == "pass" else "contained"
        assert any(line.split()[:3] == ["simple-task", attack, verdict]
                   for line in out.stdout.splitlines()), out.stdout


def _params():
    return [pytest.param(a, marks=pytest.mark.xfail(reason=f"passes on main: {PASSES_TODAY[a]}",
                                                    strict=True))
            if a in PASSES_TODAY else a for a in ATTACKS]


@pytest.mark.parametrize("attack", _params())
def test_the_attack_is_contained(attacked, attack):
    trial = attacked["trials"][attack]
    assert trial["status"] != "pass", f"{attack} won simple-task: {trial.get('output', '')}"
