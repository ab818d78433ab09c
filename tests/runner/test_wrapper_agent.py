"""A command agent whose launcher is a wrapper script (SPEC §4): the launcher is the program
holding the prompt; what it execs in place once the prompt is gone (`exec neomutt -h`) is an
agent command, with its own exit status and output. What still holds the prompt stays the
launcher."""

from __future__ import annotations

import pytest

from tests.helpers.cli import results
from tests.helpers.wrapper import SUITE, command_events, script


@pytest.mark.parametrize("launch", ["{script} {{{{prompt}}}}", "sh {script} {{{{prompt}}}}"])
def test_what_a_wrapper_execs_without_the_prompt_is_the_agent_command(cli, spec, tmp_path,
                                                                      launch):
    """`exec grep -c z data.txt; exit 7`: grep replaces the wrapper. It is the agent's one
    command: its exit status (1: grep's own, after printing 0, `; exit 7` never runs), its
    stdout, its argv; the wrapper holding the prompt is the launcher (set aside)."""
    wrapper = script(tmp_path / "agent.sh",
                     "#!/bin/sh\n# a wrapper, as users write them\nexec grep -c z data.txt; exit 7\n")
    spec(SUITE)
    out = cli("run", "spec.yaml", "--agent", "command", "-q", "--output-dir", "run",
              "--agent-command", launch.format(script=wrapper))
    [t] = results(tmp_path / "run")["trials"]
    assert t["status"] == "pass", [(c["name"], c["message"]) for c in t["checks"]]
    assert out.returncode == 0
    commands = command_events(tmp_path / "run")
    agent = [c for c in commands if not c.get("ignored")]
    assert [(c["command"], c["exit_code"], c["stdout"]) for c in agent] == [
        ("grep -c z data.txt", 1, "0\n")]
    [launcher] = [c for c in commands if c.get("ignored") == "launcher"]
    assert "Never run rm -rf" in launcher["command"]


def test_a_program_execd_with_the_prompt_stays_the_launcher(cli, spec, tmp_path):
    """The honest twin: a wrapper that execs the real agent with the prompt (`exec python3
    -c AGENT "$@"`) hands over nothing; the agent's own commands are what it starts, and
    the prompt's words ("rm -rf") are not an agent command."""
    agent = "import subprocess; subprocess.run(['grep', '-c', 'z', 'data.txt'])"
    wrapper = script(tmp_path / "agent.sh", f'#!/bin/sh\nexec python3 -c "{agent}" "$@"\n')
    spec(SUITE)
    out = cli("run", "spec.yaml", "--agent", "command", "-q", "--output-dir", "run",
              "--agent-command", f"{wrapper} {{{{prompt}}}}")
    assert out.returncode == 0, out.stdout + out.stderr
    ran = [c for c in command_events(tmp_path / "run") if not c.get("ignored")]
    assert [c["command"] for c in ran] == ["grep -c z data.txt"]


def test_without_the_prompt_in_its_command_line_the_program_is_an_agent_command(cli, spec,
                                                                               tmp_path):
    """A template without {{prompt}} (the program reads $PROCTOR_PROMPT): no program holds the
    prompt, so there is no launcher to hide; the program proctor's shell started is an agent
    command, and what it execs is that command's process."""
    wrapper = script(tmp_path / "agent.sh", "#!/bin/sh\nexec grep -c z data.txt\n")
    spec(SUITE)
    out = cli("run", "spec.yaml", "--agent", "command", "-q", "--output-dir", "run",
              "--agent-command", str(wrapper))
    assert out.returncode == 0, out.stdout + out.stderr
    [c] = [c for c in command_events(tmp_path / "run") if not c.get("ignored")]
    assert (c["command"], c["exit_code"], c["stdout"]) == (str(wrapper), 1, "0\n")
    assert [p["argv"] for p in c["processes"]] == [["grep", "-c", "z", "data.txt"]]
