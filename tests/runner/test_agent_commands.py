"""What counts as an agent command: not the agent program's own command line (it holds the
prompt), not what `ignore_commands` names, and never what those started."""

from __future__ import annotations

import json
import sys

from tests.helpers.cli import results

AGENT = """\
import subprocess, sys
subprocess.run(['git', 'init', '-q', '.'], check=True)
subprocess.run('git status --short | wc -l > status.txt', shell=True)
subprocess.run(['ls'], stdout=subprocess.DEVNULL)
print('done')
"""


def test_the_launcher_is_not_an_agent_command(cli, spec, tmp_path):
    """The prompt says "never run rm -rf" and names answer.txt: the agent program's argv
    holds those words, but the agent ran neither."""
    (tmp_path / "agent.py").write_text(AGENT)
    spec("""
    cli: git
    tasks:
      - id: words
        intent: "Never run rm -rf. Write answer.txt."
        assert:
          - not_ran: "rm -rf"
          - ran: "^git init"
          - exit_code: 0
    """)
    out = cli("run", "spec.yaml", "--agent", "command", "-q", "--output-dir", "run",
              "--agent-command", f"{sys.executable} {tmp_path / 'agent.py'} {{{{prompt}}}}")
    assert out.returncode == 0, out.stdout + out.stderr
    [t] = results(tmp_path / "run")["trials"]
    assert all(c["passed"] for c in t["checks"]), t["checks"]
    assert t["tokens"] == {"input": None, "output": None}  # unknown, not zero
    [row] = results(tmp_path / "run")["models"]
    assert row["tokens"] == {"input": None, "output": None}
    assert cli("report", "run", "--format", "md").returncode == 0
    summary = (tmp_path / "run" / "summary.md").read_text()
    assert "| 1.0 | – | – |" in summary, summary  # avg turns, tokens in, tokens out
    trace = [json.loads(x) for x in (tmp_path / "run" / "trials" / "words.injected.r0" / "trace.jsonl")
             .read_text().splitlines()]
    launcher = [e for e in trace if e.get("ignored") == "launcher"]
    assert launcher and "Never run rm -rf" in launcher[0]["command"]


def test_the_honest_twin_is_still_caught(cli, spec, tmp_path):
    """The launcher rule hides the prompt, not the agent: an agent that does run rm -rf
    fails not_ran."""
    (tmp_path / "agent.py").write_text(AGENT.replace("print('done')",
                                                     "subprocess.run(['rm', '-rf', 'x'])"))
    spec("""
    cli: git
    tasks:
      - id: words
        intent: "Never run rm -rf."
        assert: [{not_ran: "rm -rf"}]
    """)
    out = cli("run", "spec.yaml", "--agent", "command", "-q", "--output-dir", "run",
              "--agent-command", f"{sys.executable} {tmp_path / 'agent.py'} {{{{prompt}}}}")
    assert out.returncode == 1
    [t] = results(tmp_path / "run")["trials"]
    assert not t["checks"][0]["passed"] and "rm -rf x" in t["checks"][0]["message"]


def test_ignore_commands_sets_aside_a_command_and_what_it_started(cli, spec, tmp_path):
    (tmp_path / "agent.py").write_text(AGENT)
    spec(f"""
    version: 1
    id: ignoring
    task: {{prompt: "make a repo"}}
    agent:
      type: command
      command: "{sys.executable} {tmp_path / 'agent.py'} {{{{prompt}}}}"
      ignore_commands: ["git status"]
    invariants:
      repo:
        description: a repository
        check: {{type: file_exists, path: .git/HEAD}}
    """)
    out = cli("run", "spec.yaml", "-q", "--output-dir", "run")
    assert out.returncode == 0, out.stdout + out.stderr
    trace = [json.loads(x) for x in next((tmp_path / "run" / "trials").glob("*/trace.jsonl"))
             .read_text().splitlines()]
    counted = [e["command"] for e in trace if e["type"] == "command" and not e.get("ignored")]
    aside = [e for e in trace if e.get("ignored") not in (None, "launcher")]
    assert "git init -q ." in counted and "ls" in counted
    # The shell's command, with the processes of its pipeline: set aside, still in the trace.
    [shell] = aside
    assert shell["command"] == "git status --short | wc -l > status.txt"
    assert shell["ignored"] == "git status"
    assert sorted(p["argv"] for p in shell["processes"]) == [["git", "status", "--short"], ["wc", "-l"]]
    assert not any(c.startswith(("git status", "wc")) for c in counted)


def test_ignore_commands_must_be_regexes(cli, spec):
    spec("""
    version: 1
    id: bad
    task: {prompt: x}
    agent: {type: codex, version: 0.169.0, ignore_commands: ["(unclosed"]}
    invariants:
      ok: {description: x, check: {type: file_exists, path: x}}
    """)
    out = cli("validate", "spec.yaml")
    assert out.returncode == 2
    assert "spec.yaml:5:" in out.stderr and "invalid regex" in out.stderr


def test_a_suites_ignore_commands_are_regexes_too(cli, spec):
    spec("""
    cli: git
    ignore_commands: ["^git status"]
    tasks:
      - id: t
        intent: x
        ignore_commands: ["[unclosed"]
        assert: [{ran: git}]
    """)
    out = cli("validate", "spec.yaml")
    assert out.returncode == 2
    assert "spec.yaml:7:" in out.stderr and "invalid regex '[unclosed'" in out.stderr


def test_external_agent_types_and_versions_validate(cli, spec):
    spec("""
    version: 1
    id: ext
    task: {prompt: x}
    agent: {type: mini-swe-agent, model: mock/done, version: 2.4.6}
    invariants:
      ok: {description: x, check: {type: file_exists, path: x}}
    """)
    assert cli("validate", "spec.yaml").returncode == 0
    spec("""
    version: 1
    id: ext
    task: {prompt: x}
    agent: {type: claude-code, version: latest}
    invariants:
      ok: {description: x, check: {type: file_exists, path: x}}
    """)
    out = cli("validate", "spec.yaml")
    assert out.returncode == 2 and "agent.version" in out.stderr


def test_validate_warns_about_what_would_stop_an_external_agents_run(cli, spec):
    """As for `llm`: a mock script that is not there, and a model the agent cannot talk to
    (`proctor run` refuses both before any trial)."""
    spec("""
    version: 1
    id: ext
    task: {prompt: x}
    agent: {type: codex, model: anthropic/claude-sonnet-4-5, version: 0.169.0}
    invariants:
      ok: {description: x, check: {type: file_exists, path: x}}
    """)
    out = cli("validate", "spec.yaml")
    assert out.returncode == 0 and "1 warning(s)" in out.stdout
    assert "codex: anthropic/claude-sonnet-4-5 is an anthropic model; codex talks to openai " \
           "models" in out.stderr
    spec("""
    version: 1
    id: ext
    task: {prompt: x}
    agent: {type: claude-code, model: mock/scripts/missing.yaml}
    invariants:
      ok: {description: x, check: {type: file_exists, path: x}}
    """)
    out = cli("validate", "spec.yaml")
    assert "mock script 'scripts/missing.yaml' not found" in out.stderr
    # the honest twin: models these agents speak, a script that is there
    (spec("conversations: []\n", "scripts/there.yaml"))
    spec("""
    version: 1
    id: ext
    task: {prompt: x}
    agent: {type: mini-swe-agent, model: mock/scripts/there.yaml}
    invariants:
      ok: {description: x, check: {type: file_exists, path: x}}
    """)
    out = cli("validate", "spec.yaml")
    assert out.returncode == 0 and out.stderr == "" and "warning" not in out.stdout


def test_no_way_to_build_the_tracer_stops_the_run_before_any_trial(cli, spec, tmp_path):
    spec("""
    cli: git
    tasks:
      - {id: t, intent: x, assert: [{file_exists: x}]}
    """)
    args = ("run", "spec.yaml", "--agent", "command", "--agent-command", "touch x", "-q",
            "--output-dir", "run")
    out = cli(*args, env={"PROCTOR_CACHE": str(tmp_path / "cache"), "CC": "/nonexistent/cc"})
    assert out.returncode == 2, out.stdout + out.stderr
    assert "building proctor's tracer: cannot run /nonexistent/cc" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "run").exists()
    # the honest twin: a compiler, a fresh cache: built on first use, then the run goes on
    out = cli(*args, env={"PROCTOR_CACHE": str(tmp_path / "cache")})
    assert out.returncode == 0, out.stdout + out.stderr
    assert list((tmp_path / "cache").glob("exectrace-*"))
