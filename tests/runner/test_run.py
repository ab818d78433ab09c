"""`proctor run` end to end through the real CLI: verdicts, results.json, faults."""

from __future__ import annotations

import json
import shlex
import sys

from tests.helpers.cli import results, run_dir_of

SUITE = """
cli: sh
tasks:
  - id: write-file
    intent: write hello into out.txt
    solution: ["echo hello > out.txt"]
    assert:
      - file_contains: {path: out.txt, text: hello}
      - exit_code: 0
  - id: count
    intent: print 3
    category: numbers
    solution: ["echo 3"]
    assert:
      - output_equals: "3"
      - ran: "echo"
"""


def test_oracle_passes_and_results_json_has_the_contract_shape(cli, spec, tmp_path):
    spec(SUITE)
    out = cli("run", "spec.yaml", "--agent", "oracle", "--output-dir", "run")
    assert out.returncode == 0, out.stderr
    assert run_dir_of(out) == (tmp_path / "run").resolve()
    r = results(tmp_path / "run")
    assert set(r) >= {"run_id", "started_at", "finished_at", "summary", "trials", "tasks", "models"}
    assert r["summary"] == {"trials": 2, "passed": 2, "failed": 0, "errored": 0, "pass_rate": 1.0,
                            "not_run": []}
    t = r["trials"][0]
    assert set(t) >= {"id", "task_id", "model", "help_mode", "replica", "params", "status",
                      "composite_score", "error", "checks", "forbidden", "turns", "tokens",
                      "cost_usd", "duration_s"}
    assert t["model"] is None and t["status"] == "pass" and t["tokens"] == {"input": 0, "output": 0}
    assert [c["name"] for c in t["checks"]] == ["file_contains#0", "exit_code#1"]
    assert set(t["checks"][0]) >= {"name", "type", "passed", "score", "weight", "gate", "message"}
    assert {x["task_id"]: x["status"] for x in r["tasks"]} == {"write-file": "pass", "count": "pass"}
    assert r["models"][0]["model"] is None and r["models"][0]["ci95"][1] == 1.0
    # Every finished trial is also a line of results.jsonl, and has a trace and an audit log.
    lines = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    assert len(lines) == 2
    trace = (tmp_path / "run" / "trials" / t["id"] / "trace.jsonl").read_text().splitlines()
    command = next(json.loads(x) for x in trace if json.loads(x)["type"] == "command")
    assert command["argv"] == ["sh", "-c", "echo hello > out.txt"] and command["exit_code"] == 0
    audit = [json.loads(x) for x in (tmp_path / "run" / "trials" / t["id"] / "audit.jsonl").read_text().splitlines()]
    assert {"command", "file_write"} <= {a["type"] for a in audit}
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["run_id"] == r["run_id"] and meta["paths"]


def test_nop_fails_with_exit_1(cli, spec):
    spec(SUITE)
    out = cli("run", "spec.yaml", "--agent", "nop", "-q")
    assert out.returncode == 1
    r = results(run_dir_of(out))
    assert r["summary"]["failed"] == 2
    msgs = [c["message"] for t in r["trials"] for c in t["checks"] if c["type"] == "exit_code"]
    assert msgs == ["the agent ran no command"]


def test_filters_repeat_and_default_run_directory(cli, spec, tmp_path):
    spec(SUITE)
    out = cli("run", "spec.yaml", "--agent", "oracle", "--category", "numbers", "--repeat", "3", "-q")
    assert out.returncode == 0, out.stderr
    r = results(run_dir_of(out))
    assert [t["id"] for t in r["trials"]] == ["count.r0", "count.r1", "count.r2"]
    assert r["tasks"] == [{**r["tasks"][0], "task_id": "count", "trials": 3, "pass_rate": 1.0}]
    out = cli("run", "spec.yaml", "--agent", "oracle", "--task", "nope")
    assert out.returncode == 2 and "no task matches --task nope" in out.stderr


def test_invalid_spec_exits_2_and_runs_nothing(cli, spec, tmp_path):
    spec("cli: sh\ntasks:\n  - id: a\n    intent: x\n    assert: []\n")
    out = cli("run", "spec.yaml", "--agent", "oracle", "--output-dir", "run")
    assert out.returncode == 2
    assert "spec.yaml:" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_faults_each_give_a_clear_status_and_the_run_goes_on(cli, spec, tmp_path):
    (tmp_path / "crash.py").write_text("import sys\nsys.exit(3)\n")
    (tmp_path / "garbage.py").write_text("print('not json at all')\n")
    spec("""
    cli: sh
    tasks:
      - id: missing-binary
        intent: run a program that is not installed
        solution: ["definitely-not-installed-xyz --version"]
        assert: [{exit_code: 0}]
      - id: setup-fails
        intent: x
        setup: ["exit 7"]
        solution: ["true"]
        assert: [{exit_code: 0}]
      - id: hangs
        intent: x
        timeout: 1
        solution: ["sleep 3000"]  # had the timeout waited for it, the run would hang
        assert: [{exit_code: 0}]
      - id: flood
        intent: x
        solution: ["head -c 100000000 /dev/zero | tr '\\\\0' a; echo done >&2"]
        assert: [{error_contains: done}]
    """)
    out = cli("run", "spec.yaml", "--agent", "oracle", "-q", "--concurrency", "4")
    assert out.returncode == 1
    by_task = {t["task_id"]: t for t in results(run_dir_of(out))["trials"]}
    missing = by_task["missing-binary"]
    assert missing["status"] == "fail" and "127" in missing["checks"][0]["message"]
    assert by_task["setup-fails"]["status"] == "error"
    assert "setup command failed" in by_task["setup-fails"]["error"]
    assert "exited 7" in by_task["setup-fails"]["error"]
    hangs = by_task["hangs"]
    assert hangs["status"] == "fail", hangs
    assert by_task["flood"]["status"] == "pass"


def test_flood_is_capped_in_the_trace(cli, spec, tmp_path):
    spec("""
    cli: sh
    tasks:
      - id: flood
        intent: x
        solution: ["head -c 50000000 /dev/urandom | base64"]
        assert: [{exit_code: 0}]
    """)
    out = cli("run", "spec.yaml", "--agent", "oracle", "-q", "--output-dir", "run")
    assert out.returncode == 0
    trace = tmp_path / "run" / "trials" / "flood.r0" / "trace.jsonl"
    assert trace.stat().st_size < 3_000_000
    command = json.loads(trace.read_text().splitlines()[0])
    assert command["truncated"] is True and "more bytes not kept" in command["stdout"]


def test_custom_check_crash_and_garbage_make_the_trial_error(cli, spec, tmp_path):
    (tmp_path / "crash.py").write_text("import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)\n")
    (tmp_path / "garbage.py").write_text("print('not json at all')\n")
    for script in ("crash.py", "garbage.py"):
        spec(f"""
        version: 1
        id: s-{script[:-3]}
        task: {{prompt: do it}}
        agent: {{type: nop}}
        invariants:
          it:
            description: custom
            check: {{type: custom, script: {script}}}
        """, name=f"{script}.yaml")
    out = cli("run", ".", "-q")
    assert out.returncode == 1
    trials = {t["task_id"]: t for t in results(run_dir_of(out))["trials"]}
    assert trials["s-crash"]["status"] == "error" and "boom" in trials["s-crash"]["error"]
    assert trials["s-garbage"]["status"] == "error"


def test_unreadable_scaffold_errors_that_trial(cli, spec, tmp_path):
    scaffold = tmp_path / "scaffold"
    scaffold.mkdir()
    (scaffold / "a.txt").write_text("x")
    spec("""
    cli: sh
    scaffold: scaffold
    tasks:
      - id: uses-scaffold
        intent: x
        solution: ["cat a.txt"]
        assert: [{output_equals: x}]
    """)
    out = cli("run", "spec.yaml", "--agent", "oracle", "-q")
    assert out.returncode == 0, out.stderr
    scaffold.rename(tmp_path / "gone")
    out = cli("run", "spec.yaml", "--agent", "oracle", "-q")
    assert out.returncode in (1, 2)
    if out.returncode == 1:
        assert results(run_dir_of(out))["trials"][0]["status"] == "error"
    else:
        assert "scaffold" in out.stderr


def test_secrets_never_reach_disk(cli, spec, tmp_path):
    spec("""
    version: 1
    id: leak
    secrets:
      - name: API_TOKEN
        from: static://sk-very-secret-value-123
    task: {prompt: "use {{ secrets.API_TOKEN }}"}
    agent: {type: oracle}
    invariants:
      printed:
        description: the agent printed the token into a file
        check: {type: file_content, path: out.txt, contains: "sk-very"}
    solution:
      - echo "token is $API_TOKEN" | tee out.txt
      - echo "{{ secrets.API_TOKEN }}" >&2
    """)
    out = cli("run", "spec.yaml", "--output-dir", "run", "--format", "json,junit,md,html")
    assert out.returncode == 0, out.stderr
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert "sk-very-secret-value-123" not in path.read_text(errors="replace"), path
    trace = (tmp_path / "run" / "trials" / "leak.r0" / "trace.jsonl").read_text()
    assert "[REDACTED:API_TOKEN]" in trace


INTENT = "make a repo, it's 'quoted'"


def test_command_agent_is_traced_from_outside(cli, spec, tmp_path):
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import subprocess, sys\n"
        "task = sys.argv[1]\n"
        "subprocess.run(['git', 'init', '-q', '.'], check=True)\n"
        "subprocess.run('ls -a | grep -c git > count.txt', shell=True)\n"
        "subprocess.run(['echo', 'did:', task.splitlines()[-1]])\n"  # the task, after what it is told
        "print('the agent itself is not an agent command')\n")
    spec("""
    cli: git
    tasks:
      - id: external
        intent: "make a repo, it's 'quoted'"
        assert:
          - ran: "^git init"
          - run_count: {pattern: "^grep", min: 1, max: 1}  # the pipeline's grep, once
          - not_ran: "rm -rf"
          - output_contains: "did: make a repo, it's 'quoted'"
          - exit_code: 0
          - file_exists: .git/HEAD
    """)
    out = cli("run", "spec.yaml", "--agent", "command", "-q", "--output-dir", "run",
              "--agent-command", f"{sys.executable} {agent} {{{{prompt}}}}")
    assert out.returncode == 0, out.stdout + out.stderr
    trace = (tmp_path / "run" / "trials" / "external.injected.r0" / "trace.jsonl").read_text()
    commands = [e for e in map(json.loads, trace.splitlines())
                if e["type"] == "command" and not e.get("ignored")]
    # the programs the agent started, a shell's as its command string, with what they ran
    assert [c["command"] for c in commands] == [
        "git init -q .", "ls -a | grep -c git > count.txt", f"echo did: {shlex.quote(INTENT)}"]
    assert sorted(p["argv"][0] for p in commands[1]["processes"]) == ["grep", "ls"]
    assert commands[2]["stdout"] == f"did: {INTENT}\n" and commands[2]["source"] == "traced"
    [launcher] = [e for e in map(json.loads, trace.splitlines()) if e.get("ignored") == "launcher"]
    assert "the agent itself" in launcher["stdout"]


def test_command_agent_from_a_scenario(cli, spec, tmp_path):
    spec("""
    version: 1
    id: scripted
    task: {prompt: "write ok"}
    agent: {type: command, command: "sh -c 'echo ok > done.txt; echo $0' {{prompt}}"}
    invariants:
      done:
        description: done.txt says ok
        check: {type: file_content, path: done.txt, contains: ok}
    """)
    out = cli("run", "spec.yaml", "-q", "--output-dir", "run")
    assert out.returncode == 0, out.stdout + out.stderr
    assert results(tmp_path / "run")["trials"][0]["output"].strip() == "write ok"


def test_resources_timeout_bounds_the_whole_trial(cli, spec, tmp_path):
    spec("""
    version: 1
    id: slow
    resources: {timeout: 1}
    task: {prompt: x}
    agent: {type: oracle}
    invariants:
      never:
        description: d
        check: {type: file_exists, path: nothing}
    solution: ["sleep 3000"]
    """)
    out = cli("run", "spec.yaml", "-q", "--output-dir", "run")
    assert out.returncode == 1
    t = results(tmp_path / "run")["trials"][0]
    assert t["status"] == "error" and "resources.timeout (1s)" in t["error"]


def test_keep_leaves_the_sandbox_in_the_run_directory(cli, spec, tmp_path):
    spec(SUITE)
    out = cli("run", "spec.yaml", "--agent", "oracle", "-q", "--keep", "--output-dir", "run")
    assert out.returncode == 0
    assert (tmp_path / "run" / "workdirs" / "write-file.r0" / "work" / "out.txt").read_text() == "hello\n"


def test_runs_lists_runs_newest_first_with_their_outcome(cli, spec, tmp_path):
    spec(SUITE)
    first = run_dir_of(cli("run", "spec.yaml", "--agent", "oracle", "-q"))
    second = run_dir_of(cli("run", "spec.yaml", "--agent", "nop", "-q"))
    out = cli("runs", env={"COLUMNS": "250"})
    assert out.returncode == 0
    lines = [x for x in out.stdout.splitlines() if "/runs/" in x]
    # the run id, the start time, the outcome, the directory (whole)
    assert [x.split()[0] for x in lines] == [second.name, first.name]
    assert [x.split()[7] for x in lines] == [str(second), str(first)]
    assert lines[0].split()[3:7] == ["failed", "0/2", "0%", "nop"]
    assert lines[1].split()[3:7] == ["passed", "2/2", "100%", "oracle"]


def test_params_are_rendered_into_checks_per_trial(cli, spec, tmp_path):
    spec("""
    version: 1
    id: matrix
    task: {prompt: "write n={{ params.size }}"}
    agent: {type: oracle}
    parallelism: {matrix: {size: [1, 2]}, replicas: 2}
    invariants:
      right_n:
        description: the file names this trial's size
        check: {type: file_content, path: out.txt, contains: "n={{ params.size }}"}
    solution: ["echo n={{ params.size }} > out.txt"]
    """)
    out = cli("run", "spec.yaml", "-q", "--output-dir", "run")
    assert out.returncode == 0, out.stdout + out.stderr
    trials = results(tmp_path / "run")["trials"]
    assert sorted((t["params"]["size"], t["replica"]) for t in trials) == [(1, 0), (1, 1), (2, 0), (2, 1)]
    assert all(t["status"] == "pass" for t in trials)
    # Each trial's check was rendered with its own params: swap them and it must fail.
    (tmp_path / "spec.yaml").write_text((tmp_path / "spec.yaml").read_text().replace(
        'echo n={{ params.size }}', 'echo n=1'))
    out = cli("run", "spec.yaml", "-q", "--output-dir", "run2")
    status = {(t["params"]["size"], t["status"]) for t in results(tmp_path / "run2")["trials"]}
    assert status == {(1, "pass"), (2, "fail")}
