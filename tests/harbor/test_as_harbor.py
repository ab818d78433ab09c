"""What Harbor's own run of a task does around the agent and the verifier, done the same way:
scripts run directly (their shebang picks the interpreter), /logs/agent and /logs/artifacts
made for the task and /logs/artifacts collected, a prebuilt image given environment/'s files."""

from __future__ import annotations

import pytest

from tests.harbor.test_verifier import image, run, toml  # noqa: F401 (the fixture)
from tests.helpers.cli import run_dir_of
from tests.helpers.harbor import task

pytestmark = [pytest.mark.slow]


def reward_if(condition: str) -> str:
    """A verifier script: reward 1 when the shell condition holds, else 0."""
    return (f"{condition} && echo 1 > /logs/verifier/reward.txt || "
            "echo 0 > /logs/verifier/reward.txt\n")


def assert_all_pass(res, *task_ids):
    by = {t["task_id"]: t for t in res["trials"]}
    for task_id in task_ids:
        assert by[task_id]["status"] == "pass", by[task_id]


def test_scripts_run_by_their_shebang_and_without_one_by_bash(image, tmp_path):  # noqa: F811
    """Harbor runs `chmod +x` then the script itself: a python3 shebang runs python (`bash
    solve.sh` would read Python as shell); a script without one is run by bash."""
    py = task(tmp_path, "py", toml=toml(image), dockerfile=None,
              solve="#!/usr/bin/env python3\nopen('/app/solved', 'w').write('by python')\n",
              test="#!/usr/bin/env python3\nimport pathlib\n"
                   "ok = pathlib.Path('/app/solved').read_text() == 'by python'\n"
                   "pathlib.Path('/logs/verifier/reward.txt').write_text('1' if ok else '0')\n")
    bare = task(tmp_path, "bare", toml=toml(image), dockerfile=None,
                solve="[[ -n $BASH_VERSION ]] && echo bash > /app/solved\n",
                test=reward_if("[[ -n $BASH_VERSION && $(cat /app/solved) == bash ]]"))
    _, res = run(tmp_path, py, bare)
    assert_all_pass(res, "py", "bare")


def test_logs_agent_and_artifacts_are_made_and_artifacts_collected(image, tmp_path):  # noqa: F811
    """Harbor makes /logs/agent and /logs/artifacts (mode 777: a non-root agent writes them)
    and copies /logs/artifacts out after the trial; the verifier sees both."""
    t = task(tmp_path, "logs", toml=toml(image).replace("[agent]\n", "[agent]\nuser = \"player\"\n"),
             dockerfile=None,
             solve="stat -c %a /logs/agent /logs/artifacts > /logs/agent/modes\n"
                   "echo published > /logs/artifacts/report.txt\n",
             test=reward_if("[ \"$(cat /logs/agent/modes)\" = \"$(printf '777\\n777')\" ] && "
                            "[ -f /logs/artifacts/report.txt ]"))
    proc, res = run(tmp_path, t)
    (trial,) = res["trials"]
    assert trial["status"] == "pass", trial
    kept = run_dir_of(proc) / "trials" / trial["id"] / "artifacts" / "logs" / "artifacts"
    assert (kept / "report.txt").read_text() == "published\n"


def test_a_prebuilt_images_task_gets_environments_files_in_its_workdir(image, tmp_path):  # noqa: F811
    """`docker_image` and no Dockerfile: Harbor copies environment/'s files into the working
    directory at start; with a Dockerfile they are the build's context only."""
    files = {"environment/data.txt": "given\n", "environment/sub/more.txt": "more\n"}
    check = reward_if("[ \"$(cat /app/data.txt /app/sub/more.txt 2>&1)\" = "
                      "\"$(printf 'given\\nmore')\" ]")
    prebuilt = task(tmp_path, "prebuilt", toml=toml(image), dockerfile=None, files=files,
                    test=check)
    built = task(tmp_path, "built", toml=toml(image).replace(f'docker_image = "{image}"\n', ""),
                 dockerfile=f"FROM {image}\n", files=files,
                 test=reward_if("[ ! -e /app/data.txt ]"))
    _, res = run(tmp_path, prebuilt, built)
    assert_all_pass(res, "prebuilt", "built")


def test_a_compose_only_environment_runs_its_main_service(image, tmp_path):  # noqa: F811
    """No Dockerfile and no `docker_image`: the compose file's `main` says what to build (as
    Harbor merges it over its own compose file), here a Dockerfile of another name."""
    compose = ("services:\n  main:\n    build:\n      context: .\n"
               "      dockerfile: main.Dockerfile\n    environment:\n      WHO: compose\n")
    t = task(tmp_path, "composed", toml=toml(image).replace(f'docker_image = "{image}"\n', ""),
             dockerfile=None, files={"environment/docker-compose.yaml": compose,
                                     "environment/main.Dockerfile":
                                         f"FROM {image}\nRUN echo built > /app/marker\n"},
             test=reward_if("[ \"$(cat /app/marker)-$WHO\" = built-compose ]"))
    _, res = run(tmp_path, t)
    assert_all_pass(res, "composed")
