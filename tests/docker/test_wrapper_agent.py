"""The wrapper-script command agent (tests/runner/test_wrapper_agent.py) on the docker
backend: the agent commands come from the container's trace by the same reading, so what the
wrapper execs once the prompt is gone is the agent command there too."""

from __future__ import annotations

from tests.helpers.cli import Cli, results
from tests.helpers.docker import left_by
from tests.helpers.wrapper import SUITE, command_events, script


def test_what_a_wrapper_execs_without_the_prompt_is_the_agent_command(base_image, tmp_path):
    wrapper = script(tmp_path / "agent.sh", "#!/bin/sh\nexec grep -c z data.txt; exit 7\n")
    (tmp_path / "spec.yaml").write_text(SUITE)
    done = Cli(tmp_path)("run", "spec.yaml", "--backend", "docker", "--agent", "command", "-q",
                         "--output-dir", "run", "--agent-command", f"{wrapper} {{{{prompt}}}}",
                         timeout=600)
    [t] = results(tmp_path / "run")["trials"]
    assert t["status"] == "pass", [(c["name"], c["message"]) for c in t["checks"]]
    assert done.returncode == 0
    ran = [c for c in command_events(tmp_path / "run") if not c.get("ignored")]
    assert [(c["command"], c["exit_code"], c["stdout"]) for c in ran] == [
        ("grep -c z data.txt", 1, "0\n")]
    assert left_by(tmp_path / "run") == []
