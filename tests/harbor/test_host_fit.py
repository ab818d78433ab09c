"""A task asking more than this machine has (Harbor's `cpus = 4` on two CPUs) runs with what
there is, saying so; and a docker command that fails says docker's own reason, not the
client's `Run 'docker run --help' for more information`."""

from __future__ import annotations

import asyncio
import os

import pytest

from proctor.dockercli import docker, ok, said
from proctor.proc import ExecResult
from tests.docker.engine import require_engine
from tests.helpers.cli import Cli, results, run_dir_of
from tests.helpers.harbor import task

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def base_image() -> str:
    require_engine()
    from proctor.sandbox.docker.images import ensure_base

    return ensure_base()

BIG = """\
version = "1.0"
[verifier]
timeout_sec = 120.0
[agent]
timeout_sec = 120.0
[environment]
docker_image = "{image}"
cpus = 64
memory_mb = 100000000
"""


def test_docker_s_own_line_is_the_reason():
    out = ("docker: Error response from daemon: Range of CPUs is from 0.01 to 2.00, as there "
           "are only 2 CPUs available.\nSee 'docker run --help'.\n\n"
           "Run 'docker run --help' for more information\n")
    assert said(out) == "Range of CPUs is from 0.01 to 2.00, as there are only 2 CPUs available."
    with pytest.raises(OSError) as e:
        ok(ExecResult(exit_code=125, stdout="", stderr=out, duration_s=0.1, started_at=0.0), ("run",))
    assert str(e.value) == ("docker run: Range of CPUs is from 0.01 to 2.00, as there are only "
                            "2 CPUs available.")


def test_a_refused_docker_run_says_why(base_image):
    cpus = os.cpu_count() or 1
    done = asyncio.run(docker("run", "--rm", "--cpus", str(cpus * 100), base_image, "true"))
    with pytest.raises(OSError) as e:
        ok(done, ("run",))
    assert str(e.value).startswith("docker run: Range of CPUs is from 0.01 to "), str(e.value)


def test_limits_beyond_the_machine_are_clamped_with_a_warning(base_image, tmp_path):
    # The verifier reads the container's own CPU quota: what the engine was given.
    t = task(tmp_path, "big", toml=BIG.format(image=base_image), dockerfile=None,
             test="""\
             q=$(cat /sys/fs/cgroup/cpu.max 2>/dev/null || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us)
             echo "$q" > /logs/verifier/quota
             echo 1 > /logs/verifier/reward.txt
             """)
    out = Cli(tmp_path)("run", str(t), "--agent", "oracle", timeout=600)
    assert "Traceback" not in out.stderr
    have = int(_engine_cpus())
    assert (f"proctor: warning: big: cpus = 64, but the engine has {have} CPU"
            f"{'s' if have != 1 else ''}; its containers get {have}") in out.stderr, out.stderr
    assert "proctor: warning: big: memory 100000000 MiB, but the engine's machine has " \
        in out.stderr
    assert out.returncode == 0, out.stderr
    res = results(run_dir_of(out))
    assert res["summary"]["passed"] == 1
    trial = res["trials"][0]["id"]
    quota = (run_dir_of(out) / "trials" / trial / "verifier" / "quota").read_text().split()
    assert int(quota[0]) == have * 100000, quota


def _engine_cpus() -> float:
    from proctor.sandbox.docker.host import capacity

    have = capacity()
    assert have is not None
    return have[0]
