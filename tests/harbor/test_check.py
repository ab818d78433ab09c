"""`proctor check` on a Harbor dataset: it says what it does as it goes (builds, trials), and a
task proctor could not run here (its image does not build, its verifier's downloads were
refused) is listed apart with the cause, never as a task whose solution fails."""

from __future__ import annotations

import pytest

from tests.docker.engine import require_engine
from tests.helpers.cli import Cli
from tests.helpers.harbor import task

pytestmark = [pytest.mark.slow]

TOML = """\
version = "1.0"
[verifier]
timeout_sec = 120.0
[agent]
timeout_sec = 120.0
[environment]
{image}
"""
REWARD = ('[ -f /tmp/done ] && echo 1 > /logs/verifier/reward.txt || '
          'echo 0 > /logs/verifier/reward.txt\n')


def test_check_separates_what_proctor_could_not_run_from_task_bugs(tmp_path):
    require_engine()
    from proctor.sandbox.docker.images import ensure_base

    base = ensure_base()
    image = TOML.format(image=f'docker_image = "{base}"')
    data = tmp_path / "dataset"
    task(data, "good", toml=image, dockerfile=None, solve="touch /tmp/done\n", test=REWARD)
    task(data, "bug", toml=image, dockerfile=None, solve="touch /tmp/elsewhere\n", test=REWARD)
    task(data, "unbuildable", toml=TOML.format(image=""), solve="touch /tmp/done\n", test=REWARD,
         dockerfile=f"FROM {base}\nRUN printf '\\033[31mno compiler here\\033[0m\\n'; exit 3\n")
    task(data, "offline", toml=image, dockerfile=None, solve="touch /tmp/done\n", test="""\
         python3 -c "import urllib.request; urllib.request.urlopen('http://10.1.2.3/x')" \\
           && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
         """)
    out = Cli(tmp_path)("check", str(data), "--concurrency", "2", timeout=900)
    assert "Traceback" not in out.stderr and "\x1b" not in out.stderr + out.stdout
    assert out.returncode == 1, out.stderr
    err = out.stderr
    # Progress: each pass, the build of each image.
    assert "proctor: check: oracle on 4 task(s) (each task's solution must pass)" in err
    assert "proctor: check: nop on 4 task(s) (doing nothing must fail)" in err
    assert "proctor: building the image of task " in err and ": unbuildable: " in err
    # The task's own bug, and what proctor could not run, with the cause.
    assert ("dataset/bug/task.toml: bug: solution fails: composite 0.00 < pass_threshold 1; "
            "failed: reward: reward 0") in err, err
    assert ("dataset/unbuildable/task.toml: unbuildable: proctor could not run it here (build): "
            "building ") in err, err
    assert "/dataset/unbuildable/environment/Dockerfile failed: no compiler here\n" in err
    assert ("dataset/offline/task.toml: offline: proctor could not run it here (network): the "
            "checks' network requests were refused: 10.1.2.3") in err, err
    assert "unbuildable: solution" not in err and "offline: solution" not in err
    assert ": good:" not in err
    assert out.stdout.strip().endswith(
        "1 problem(s), 2 task(s) proctor could not run here: 4 task(s) checked with oracle "
        "and nop"), out.stdout


def test_a_pin_the_stand_in_cannot_satisfy_is_a_pin_not_a_task_bug(tmp_path):
    """Issue 36: a solution that only fails because it installs a version pinned for Ubuntu
    (`apt-get install wget=1.21.4-1ubuntu4.1`) on proctor's Debian stand-in was reported as
    "solution fails". It is a pin: named, with the image map and how to relax it."""
    require_engine()
    from tests.helpers.harbor import public_addresses

    (tmp_path / "proctor.toml").write_text(f"public_addresses = {public_addresses()!r}\n")
    # debian:bookworm-slim is never pulled here: proctor's Debian bookworm stand-in runs it
    image = TOML.format(image='docker_image = "debian:bookworm-slim"')
    data = tmp_path / "dataset"
    task(data, "pinned", toml=image, dockerfile=None, test=REWARD,
         solve="apt-get update -qq\napt-get install -y -qq bc=1.07.1-3ubuntu4\n"
               "[ \"$(echo 20+22 | bc)\" = 42 ] && touch /tmp/done\n")
    task(data, "bug", toml=image, dockerfile=None, solve="touch /tmp/elsewhere\n", test=REWARD)
    out = Cli(tmp_path)("check", str(data), timeout=1800)
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == 1, out.stderr
    err = out.stderr
    assert ("dataset/pinned/task.toml: pinned: proctor could not run it here (a pin): "
            "bc=1.07.1-3ubuntu4: a version pinned for another distribution; this image is "
            "proctor's Debian bookworm stand-in (the image map, docs/harbor.md#the-image-map), "
            "which has bc ") in err, err
    assert ("; relax_pins in proctor.toml installs that instead (in its solution; "
            "docs/harbor.md#pinned-package-versions)") in err, err
    assert "pinned: solution fails" not in err
    assert "dataset/bug/task.toml: bug: solution fails: " in err  # a real bug stays one
    assert out.stdout.strip().endswith(
        "1 problem(s), 1 task(s) proctor could not run here: 2 task(s) checked with oracle "
        "and nop"), out.stdout
