"""A Harbor verifier in a container of its own (`[verifier] environment_mode = "separate"`):
its image is built from tests/Dockerfile, only the agent's /logs/artifacts and the task's
`artifacts` cross into it, and it is gone after the run."""

from __future__ import annotations

import subprocess

import pytest

from tests.docker.engine import require_engine
from tests.helpers.cli import Cli, results, run_dir_of
from tests.helpers.docker import gone
from tests.helpers.harbor import task

pytestmark = [pytest.mark.slow]

TOML = """\
version = "1.0"
artifacts = ["/app/kept.txt"]

[verifier]
timeout_sec = 60.0
environment_mode = "separate"

[verifier.environment]
memory_mb = 512

[agent]
timeout_sec = 60.0

[environment]
docker_image = "{image}"
memory_mb = 512
"""

SOLVE = """\
mkdir -p /logs/artifacts
echo published > /logs/artifacts/answer.txt
echo kept > /app/kept.txt
echo private > /app/private.txt
"""

# What the verifier saw, in a file of /logs/verifier (kept with the trial), and the reward.
TEST = """\
seen() { if [ -e "$1" ]; then echo "$1: $(cat "$1")"; else echo "$1: absent"; fi; }
{ seen /logs/artifacts/answer.txt; seen /app/kept.txt; seen /app/private.txt
  seen /app/seed.txt; seen /verifier-image.txt; } > /logs/verifier/seen.txt
if [ "$(cat /logs/artifacts/answer.txt 2>/dev/null)" = published ] &&
   [ "$(cat /app/kept.txt 2>/dev/null)" = kept ] && [ ! -e /app/private.txt ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


@pytest.fixture(scope="module")
def image() -> str:
    """The agent's image: proctor's base with a file of its own (no registry)."""
    require_engine()
    from proctor.sandbox.docker.images import ensure_base

    tag = "proctor-test-harbor-separate:1"
    dockerfile = f"FROM {ensure_base()}\nRUN mkdir -p /app && echo seed > /app/seed.txt\nWORKDIR /app\n"
    subprocess.run(["docker", "build", "-q", "--force-rm", "-t", tag, "-"], input=dockerfile,
                   text=True, capture_output=True, check=True)
    return tag


def test_the_separate_verifier_sees_only_the_artifacts(image, tmp_path):
    d = task(tmp_path, "apart", toml=TOML.format(image=image), dockerfile=None, solve=SOLVE,
             test=TEST, files={"tests/Dockerfile": f"FROM {image}\nCOPY test.sh /tests/test.sh\n"
                               "RUN echo mine > /verifier-image.txt\n"})
    check = Cli(tmp_path)("check", str(d))
    assert check.returncode == 0 and "not supported" not in check.stdout + check.stderr, \
        check.stdout + check.stderr
    proc = Cli(tmp_path)("run", str(d), "--agent", "oracle", "--agent", "nop", "-q", timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    run_dir = run_dir_of(proc)
    by = {t["agent"]: t for t in results(run_dir)["trials"]}
    assert by["oracle"]["status"] == "pass", by["oracle"]
    assert by["nop"]["status"] == "fail" and by["nop"]["error"] is None, by["nop"]
    seen = (run_dir / "trials" / by["oracle"]["id"] / "verifier" / "seen.txt").read_text()
    # The artifacts at their own paths; the agent's other files are not there; the
    # verifier's image is its own (tests/Dockerfile), the agent's image under it.
    assert seen.splitlines() == ["/logs/artifacts/answer.txt: published", "/app/kept.txt: kept",
                                 "/app/private.txt: absent", "/app/seed.txt: seed",
                                 "/verifier-image.txt: mine"]
    nop = (run_dir / "trials" / by["nop"]["id"] / "verifier" / "seen.txt").read_text()
    assert "/logs/artifacts/answer.txt: absent" in nop
    # Every container of the run (the agent's and the verifier's) is removed by the engine
    # once its init is killed (--rm), a moment after proctor exits: asked for up to 10 s.
    assert gone(results(run_dir)["run_id"]) == [], "containers of the run left behind"
