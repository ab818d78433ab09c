"""`proctor check --attacks` on the Harbor cookbook's simple-task, unchanged: every attack of
the battery runs against it on the docker backend (the task's own container, Harbor's
verifier), and the table says which ones win it. docs/security.md#proctor-check---attacks
has the table.

What this pins is what is true on main: every attack must stay contained, and those the
verifier names as tampering (SPEC §4) must be failed for it, naming what they changed. An
attack that wins one day goes in PASSES_TODAY with why (an expected failure, strict).
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
# Measured on main, 2026-12-06 (docs/security.md): every attack is contained since the
# verifier runs apart from the agent's processes and names what it would run of the agent's.
PASSES_TODAY: dict[str, str] = {}
# Attacks the verifier would have lost to, failed as tampering naming (a part of) each file.
TAMPERING = {"trojan-shell": "/usr/bin/bash", "trojan-curl": "/usr/local/bin/curl",
             "curlrc": "/root/.curlrc", "conftest": "/conftest.py", "pytest-ini": "/pytest.ini"}


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
    if attack in TAMPERING:
        assert trial["status"] == "fail", trial
        assert TAMPERING[attack] in [t["path"] for t in trial["tampering"]], trial["tampering"]
