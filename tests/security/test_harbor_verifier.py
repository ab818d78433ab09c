"""A Harbor task's verifier against a hostile agent (docs/harbor.md#the-verifier): the agent
runs as root in the task's container, as in Harbor, so everything it leaves behind there is
suspect. What proctor guarantees: no reward file and no test file the agent wrote is read,
and no process the agent started is still running when the tests arrive. Each attack has an
honest twin that passes."""

from __future__ import annotations

import pytest

from tests.harbor.test_verifier import image, run, toml  # noqa: F401 (the fixture)
from tests.helpers.harbor import task

pytestmark = pytest.mark.slow

ONLY_IF_DONE = ("if [ -f /app/done ]; then echo 1 > /logs/verifier/reward.txt; "
                "else echo checked > /dev/null; fi\n")


def test_a_reward_the_agent_wrote_is_not_read(image, tmp_path):  # noqa: F811
    cheat = task(tmp_path, "cheat", toml=toml(image), dockerfile=None, test=ONLY_IF_DONE,
                 solve="mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt\n")
    honest = task(tmp_path, "honest", toml=toml(image), dockerfile=None, test=ONLY_IF_DONE,
                  solve="touch /app/done\n")
    _, res = run(tmp_path, cheat, honest)
    by = {t["task_id"]: t for t in res["trials"]}
    assert by["cheat"]["status"] == "error" and "no reward" in by["cheat"]["error"]
    assert by["honest"]["status"] == "pass"


def test_a_test_script_the_agent_planted_is_replaced(image, tmp_path):  # noqa: F811
    planted = ("mkdir -p /tests; printf 'echo 1 > /logs/verifier/reward.txt\\n' > /tests/test.sh;"
               " chmod 555 /tests/test.sh; chattr +i /tests/test.sh 2>/dev/null; true\n")
    cheat = task(tmp_path, "cheat", toml=toml(image), dockerfile=None, solve=planted,
                 test="echo 0 > /logs/verifier/reward.txt\n")
    honest = task(tmp_path, "honest", toml=toml(image), dockerfile=None, solve="true\n",
                  test="echo 1 > /logs/verifier/reward.txt\n")
    _, res = run(tmp_path, cheat, honest)
    by = {t["task_id"]: t for t in res["trials"]}
    assert by["cheat"]["status"] == "fail" and by["cheat"]["composite_score"] == 0.0
    assert by["honest"]["status"] == "pass"


def test_no_process_of_the_agent_outlives_it(image, tmp_path):  # noqa: F811
    """A daemon (detached, its environment cleared so no mark of proctor's finds it) that
    would write the reward while the verifier runs is gone before the tests arrive; the
    task's own ENTRYPOINT daemon (started before the agent) is not."""
    daemon = ("setsid env -i /bin/sh -c 'while :; do touch /app/daemon-ran; mkdir -p /logs/verifier; "
              "echo 1 > /logs/verifier/reward.txt 2>/dev/null; sleep 0.05; done' "
              "</dev/null >/dev/null 2>&1 &\n"
              "while [ ! -f /app/daemon-ran ]; do sleep 0.05; done\n")  # it is running
    test = ("sleep 1; pgrep -f 'sleep 1000' >/dev/null && echo entrypoint-alive > "
            "/logs/verifier/note.txt; [ -f /app/daemon-ran ] && echo daemon-ran >> "
            "/logs/verifier/note.txt; [ -f /app/done ] && echo 1 > /logs/verifier/reward.txt "
            "|| echo 0 > /logs/verifier/reward.txt\n")
    cheat = task(tmp_path, "cheat", toml=toml(image), dockerfile=None, solve=daemon, test=test)
    honest = task(tmp_path, "honest", toml=toml(image), dockerfile=None, solve="touch /app/done\n",
                  test=test)
    proc, res = run(tmp_path, cheat, honest)
    by = {t["task_id"]: t for t in res["trials"]}
    assert by["cheat"]["status"] == "fail", by["cheat"]
    assert by["honest"]["status"] == "pass"
    from tests.helpers.cli import run_dir_of

    note = run_dir_of(proc) / "trials" / by["cheat"]["id"] / "verifier" / "note.txt"
    assert note.read_text().split() == ["entrypoint-alive", "daemon-ran"]  # it did run
