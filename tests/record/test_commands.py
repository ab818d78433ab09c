"""Agent commands read from a trace (record/commands.py): which programs of an agent program
are tool calls, its own, or its housekeeping; each tool call's string, processes, exit
status and output."""

from __future__ import annotations

import re

from proctor.record.commands import Reading, from_trace, read_program, shell_string
from proctor.sandbox.trace import parse_trace

# An agent in the style of Codex: its launcher script execs node, which starts its binary;
# the binary runs housekeeping (lsb_release and what that starts) and two tool calls, each
# under its process set-up (a wrapper) and a `bash -c CMD`.
AGENT = r"""S 10 1.0
E 10 1.0 ["/bin/sh","-c","/opt/agent/bin/agent exec 'do it'"]
E 10 1.1 ["/opt/agent/bin/agent","exec","do it"]
E 10 1.2 ["node","/opt/agent/bin/agent","exec","do it"]
F 10 11
E 11 1.3 ["/opt/agent/native/agent","exec","do it"]
F 11 12
E 12 1.4 ["/bin/sh","/usr/bin/lsb_release","-a"]
F 12 13
E 13 1.5 ["cut","-c1"]
X 13 0 1.6
X 12 0 1.7
F 11 20
E 20 2.0 ["/proc/self/exe","--setup","/usr/bin/bash"]
E 20 2.1 ["/usr/bin/bash","-c","git add -A && git commit -qm x"]
O 20 "pipe:[1]" "pipe:[2]"
F 20 21
E 21 2.2 ["git","add","-A"]
O 21 "pipe:[1]" "pipe:[2]"
X 21 0 2.3
E 20 2.4 ["git","commit","-qm","x"]
O 20 "pipe:[1]" "pipe:[2]"
W 20 1 6 "pipe:[1]" "done\u000a "
F 20 22
E 22 2.5 ["git","maintenance","run","--auto"]
X 22 0 2.6
X 20 0 2.7
F 11 30
E 30 3.0 ["/proc/self/exe","--setup","/usr/bin/bash"]
E 30 3.1 ["/usr/bin/bash","-c","ls nothing-here"]
O 30 "pipe:[3]" "pipe:[3]"
E 30 3.2 ["ls","nothing-here"]
O 30 "pipe:[3]" "pipe:[3]"
W 30 2 8 "pipe:[3]" "no such\u000a"
X 30 2 3.3
X 11 0 3.4
W 10 1 5 "pipe:[0]" "done\u000a"
X 10 0 3.5
Z 3.5
"""

READING = Reading(is_launcher=lambda argv, parent: any(a.startswith("/opt/agent/")
                                                       for a in argv[:2]),
                  tool=re.compile(r"^/proc/self/exe --setup "),
                  wrappers=(re.compile(r"^/proc/self/exe --setup "),),
                  set_aside=("^git maintenance",))


def trace_of(tmp_path, text: str):
    (tmp_path / "trace").write_text(text)
    return parse_trace(tmp_path / "trace")


def test_an_agent_programs_tool_calls_and_what_it_runs_for_itself(tmp_path):
    t = trace_of(tmp_path, AGENT)
    parts = read_program(t, READING)
    assert [(p.command, p.aside) for p in parts] == [
        ("/bin/sh /usr/bin/lsb_release -a", "housekeeping"),
        ("git add -A && git commit -qm x", None),
        ("ls nothing-here", None)]
    commit = from_trace(t, parts[1].root, parts[1].command, cwd="/w", limit=100)
    assert [p.argv for p in commit.processes] == [
        ["git", "add", "-A"], ["git", "commit", "-qm", "x"], ["git", "maintenance", "run", "--auto"]]
    assert [p.parent for p in commit.processes] == [-1, -1, 1]  # maintenance: git commit's
    assert (commit.exit_code, commit.stdout, commit.stderr) == (0, "done\n ", "")
    assert commit.started_at == 2.1 and commit.duration_s == 0.6 and commit.source == "traced"
    ls = from_trace(t, parts[2].root, parts[2].command, cwd="/w", limit=100)
    # bash exec'd ls: the command's exit status is ls's; one pipe for both, told by the fd
    assert (ls.exit_code, ls.stdout, ls.stderr) == (2, "", "no such\n")


def test_the_agent_program_and_what_it_execs_into_are_not_commands(tmp_path):
    # proctor's sh execs the launcher script, which execs node: all the agent itself
    parts = read_program(trace_of(tmp_path, AGENT), Reading(
        is_launcher=lambda argv, parent: parent == 0))
    assert "node /opt/agent/bin/agent exec 'do it'" not in [p.command for p in parts]
    assert [p.command for p in parts] == ["/opt/agent/native/agent exec 'do it'"]


def test_a_pattern_sets_aside_a_command_with_everything_it_started(tmp_path):
    reading = Reading(is_launcher=READING.is_launcher, tool=READING.tool,
                      wrappers=READING.wrappers, set_aside=("^git add",))
    parts = read_program(trace_of(tmp_path, AGENT), reading)
    assert [(p.command, p.aside) for p in parts][1] == ("git add -A && git commit -qm x",
                                                       "^git add")


def test_output_beyond_the_limit_is_cut_and_counted(tmp_path):
    t = trace_of(tmp_path, AGENT)
    parts = read_program(t, READING)
    commit = from_trace(t, parts[1].root, parts[1].command, cwd="/w", limit=2)
    assert commit.stdout == "do\n[proctor: 4 more bytes not kept]" and commit.truncated


def test_a_command_cut_by_the_timeout(tmp_path):
    cut = AGENT.split("W 30 2 8")[0]  # killed before ls ended: no exit lines
    t = trace_of(tmp_path, cut)
    parts = read_program(t, READING)
    ls = from_trace(t, parts[2].root, parts[2].command, cwd="/w", limit=100, timed_out=True)
    assert ls.exit_code is None and ls.timed_out
    assert [p.exit_code for p in ls.processes] == [None]


def test_a_shells_command_string():
    assert shell_string(["/bin/sh", "-c", "ls | wc"]) == "ls | wc"
    assert shell_string(["bash", "-lc", "ls"]) == "ls"
    assert shell_string(["/bin/bash", "-c", "-l", "ls"]) == "ls"
    assert shell_string(["/bin/sh", "-c", "echo $0", "name"]) == "echo $0"
    assert shell_string(["sh", "script.sh"]) is None
    assert shell_string(["python3", "-c", "print(1)"]) is None
