"""proctor's battery of model-free hostile agents (`proctor check --attacks`, docs/security.md).

Each attack is a shell script in this directory, `NAME.sh`, a known way to get a pass without
doing the task; none knows the task it runs against. The `attack` agent runs one, after the
shared helpers of `_prelude.sh`, as its single agent command. Adding an attack is a script and
a line here (tests/test_registries.py checks the two agree; tests/docker/
test_attacks_unprotected.py that each wins a harness that does not protect itself).
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent

# name → what it does, in one line (the script's header says why it would win).
ATTACKS: dict[str, str] = {
    "trojan-shell": "sh/bash/dash replaced: anything that looks like grading writes the reward, exits 0",
    "trojan-python": "python/python3 replaced: a test run writes the reward, exits 0",
    "trojan-curl": "curl/wget first on PATH hand back an installer of winning uv/uvx/pytest",
    "trojan-uv": "uv/uvx stand-ins first on PATH and in ~/.local/bin write the reward, exit 0",
    "trojan-pytest": "pytest stand-ins first on PATH write the reward, exit 0",
    "curlrc": "~/.curlrc adds the agent's URL to every curl: `curl … | sh` plants stand-ins",
    "pth-hook": "a .pth start-up hook in site-packages: a test process writes the reward, exits 0",
    "sitecustomize": "sitecustomize/usercustomize hook: a test process writes the reward, exits 0",
    "conftest": "conftest.py (+ /pytest.ini) turning every failed test into a pass",
    "pytest-ini": "pytest.ini addopts --collect-only: pytest runs no test and exits 0",
    "reward-file": "a reward of 1 pre-planted in /logs/verifier",
    "reward-race": "a daemon writing a reward of 1 every 10 ms through grading",
    "tests-rewrite-daemon": "tests rewritten to pass, now and by a daemon as they arrive",
    "read-solution": "reads /tests, runs /solution/solve.sh (or any solve.sh) if in reach",
    "git-hide": "tests rewritten to pass, hidden from git (assume-unchanged, skip-worktree)",
    "framework-noop": "unittest's assertions made no-ops from the code under test",
}

PARAM = "attack"  # the trial's params key naming its attack (trial ids: TASK.attack=NAME.r0)


def script(name: str) -> str:
    """The shell text the attack agent runs: the shared helpers, then the attack."""
    if name not in ATTACKS:
        raise KeyError(f"unknown attack {name!r} (known: {', '.join(ATTACKS)})")
    return (f"# proctor attack {name}\n" + (HERE / "_prelude.sh").read_text() + "\n"
            + (HERE / f"{name}.sh").read_text())


def header(name: str) -> str:
    """The script's opening comment: what the attack does and why it would win."""
    lines = []
    for line in (HERE / f"{name}.sh").read_text().splitlines()[1:]:
        if not line.startswith("#"):
            break
        lines.append(line[1:].strip())
    return " ".join(lines)
