"""The real Claude Code, Codex CLI and mini-swe-agent under `proctor run`, against the mock
model, on examples/external-agents: installed from the cache ./setup.sh filled (or on first
use), driven through the recording proxy, their commands traced from the process tree."""

from __future__ import annotations

import http.server
import json
import shutil
import threading
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.helpers.agents import AGENTS, need_agent
from tests.helpers.cli import Cli, results, run_dir_of

pytestmark = pytest.mark.slow

EXAMPLE = REPO / "examples" / "external-agents"


def trace(run: Path) -> list[dict]:
    [path] = run.glob("trials/*/trace.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("agent", AGENTS)
def test_the_agent_passes_with_the_good_script(agent, tmp_path):
    need_agent(agent)
    proc = Cli(tmp_path)("run", str(EXAMPLE), "--agent", agent, "-q", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = run_dir_of(proc)
    [t] = results(run)["trials"]
    assert t["status"] == "pass" and t["agent"] == agent
    assert t["turns"] >= 2 and t["tokens"]["input"] > 0  # through the proxy
    # The agent's final answer, and only that: not Claude Code's JSON around it, not the
    # conversation (the prompt included) mini-swe-agent prints. output_* checks read it.
    assert t["output"].strip() == "count.txt holds 3: the number of data rows."
    events = trace(run)
    commands = [e for e in events if e["type"] == "command"]
    counted = [e for e in commands if not e.get("ignored")]
    # One agent command per tool call, read from proctor's trace: the command, what it
    # started, its exit status and output, and the model's tool call it answers.
    assert [c["command"] for c in counted] == ["tail -n +2 orders.csv | wc -l > count.txt",
                                               "cat count.txt"]
    assert all(c["source"] == "traced" and c["exit_code"] == 0 and c["tool_call_id"]
               for c in counted)
    assert sorted(p["argv"][0] for p in counted[0]["processes"]) == ["tail", "wc"]
    assert (counted[1]["stdout"], counted[1]["stderr"]) == ("3\n", "")
    # The agent program itself holds the prompt ("Never delete files"): not a command.
    [launcher] = [e for e in commands if e.get("ignored") == "launcher"]
    assert launcher["source"] == "launcher" and launcher["stdout"] == t["output"]
    printed = [e["stdout"] for e in events if e["type"] == "agent_stdout"]
    if agent != "codex":  # codex prints just its answer; the others more, kept in the trace
        assert len(printed) == 1 and t["output"].strip() in printed[0]
    assert not any("Never delete" in c["command"] for c in counted)
    model_calls = [e for e in events if e["type"] == "model_call"]
    assert model_calls and all(e["status"] == 200 for e in model_calls)
    run_json = json.loads((run / "run.json").read_text())
    assert agent in run_json["versions"]
    # Nothing but the model: no update check, telemetry, plugin sync or price-map download
    # leaves through the box's egress (each a wait at start-up, and noise, where it is open).
    [audit] = run.glob("trials/*/audit.jsonl")
    egress = [e["details"] for e in map(json.loads, audit.read_text().splitlines())
              if e["type"] == "http_call"]
    assert egress == [], egress


@pytest.mark.parametrize("agent", AGENTS)
def test_the_broken_twin_fails_for_the_right_reason(agent, tmp_path):
    need_agent(agent)
    proc = Cli(tmp_path)("run", str(EXAMPLE), "--agent", agent, "-q",
                         "--model", "mock/scripts/wrong-count.yaml", timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [t] = results(run_dir_of(proc))["trials"]
    assert t["status"] == "fail", t.get("error")
    failed = [c["name"] for c in t["checks"] if not c["passed"]]
    assert failed == ["verify#0"]  # count.txt says 4; everything else held


def test_claude_code_housekeeping_is_in_the_trace_not_in_the_commands(tmp_path):
    need_agent("claude-code")
    proc = Cli(tmp_path)("run", str(EXAMPLE), "--agent", "claude-code", "-q", timeout=600)
    events = trace(run_dir_of(proc))
    aside = [e for e in events if e["type"] == "command" and e.get("ignored") == "housekeeping"]
    assert any(e["command"] == "env" for e in aside)
    [t] = results(run_dir_of(proc))["trials"]
    ran = next(c for c in t["checks"] if c["name"] == "not_ran#2")
    assert ran["passed"], ran["message"]
    # proctor show counts what was set aside on one line (--full lists it, each saying why),
    # puts the command under the call that caused it, and invents no exit code
    show = ("show", str(run_dir_of(proc)), t["id"])
    shown = Cli(tmp_path)(*show, env={"COLUMNS": "200"}).stdout
    assert "commands set aside (housekeeping)" in shown and "$ id -u" not in shown
    lines = shown.splitlines()
    # the call's line says the command once, and what came of it (no `$ X`, no `started:`
    # naming its own programs again)
    timeline = lines[:next(i for i, x in enumerate(lines) if x.startswith("checks ─"))]
    (line,) = [x for x in timeline if "tail -n +2 orders.csv | wc -l > count.txt" in x]
    assert line.startswith("  → Bash: tail -n +2 orders.csv | wc -l > count.txt") and \
        "[exit 0, " in line
    assert "started:" not in line
    assert "exit None" not in shown and "▸ all the agent printed" in shown
    full = Cli(tmp_path)(*show, "--full", env={"COLUMNS": "200"}).stdout
    assert "$ env  (set aside: housekeeping)" in full


@pytest.mark.parametrize("agent", AGENTS)
def test_a_broken_model_endpoint_is_an_error_not_a_failure(agent, tmp_path):
    """The mock answers 400 (no conversation matches): the agent gives up, and the trial
    is an error naming the endpoint's answer, not a failure of the agent."""
    need_agent(agent)
    spec_dir = tmp_path / "spec"
    shutil.copytree(EXAMPLE, spec_dir)
    (spec_dir / "scripts" / "count.yaml").write_text(
        "conversations:\n  - when: {prompt_contains: NOTHING-MATCHES}\n    turns: [{say: hi}]\n")
    proc = Cli(tmp_path)("run", str(spec_dir), "--agent", agent, "-q", timeout=600)
    assert proc.returncode == 1
    [t] = results(run_dir_of(proc))["trials"]
    assert (t["status"], t["error_kind"]) == ("error", "provider"), t
    assert "the model endpoint failed" in t["error"] and "HTTP 400" in t["error"]
    assert t["checks"] == []  # an error: the checks do not judge a trial that never ran


def test_the_agent_files_are_its_own_not_task_writes(tmp_path):
    """fix-the-bug forbids writes outside its paths: Claude Code's own ~/.claude files do
    not count, the task's writes still do."""
    need_agent("claude-code")
    proc = Cli(tmp_path)("run", str(REPO / "examples" / "fix-the-bug"), "--agent",
                         "claude-code", "--model", "mock/solver", "-q", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = run_dir_of(proc)
    [t] = results(run)["trials"]
    assert t["status"] == "pass" and not any(f["violated"] for f in t["forbidden"])
    own = [e for e in trace(run) if e["type"] == "agent_state_write"]
    assert any(e["path"].endswith(".claude.json") for e in own)
    [audit] = run.glob("trials/*/audit.jsonl")
    writes = [json.loads(x)["details"]["path"] for x in audit.read_text().splitlines()
              if json.loads(x)["type"] == "file_write"]
    assert sorted(writes) == ["CHANGELOG.md", "shop/cart.py"]


def test_a_model_the_agent_cannot_speak_is_refused_before_any_trial(tmp_path):
    proc = Cli(tmp_path)("run", str(EXAMPLE), "--agent", "codex", "--model",
                         "anthropic/claude-sonnet-4-5", env={"ANTHROPIC_API_KEY": "k"})
    assert proc.returncode == 2
    assert "codex talks to openai models" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_configured_provider_is_reached_through_the_proxy_holding_the_key(tmp_path):
    """A real provider's path (here an OpenAI-compatible server that is mock-llm in its own
    process): the agent talks to the proxy with a dummy key; the real key never enters the
    sandbox."""
    from tests.helpers.llm import ServerProcess

    need_agent("codex")

    script = tmp_path / "upstream.yaml"
    script.write_text(
        "conversations:\n  - when: {prompt_contains: orders.csv}\n    turns:\n"
        "      - tool: {name: exec_command, arguments: {cmd: 'env > env.txt; "
        "tail -n +2 orders.csv | wc -l > count.txt'}}\n      - say: done\n")
    server = ServerProcess(script)
    try:
        (tmp_path / "proctor.toml").write_text(
            f'[providers.upstream]\nkind = "openai"\nbase_url = "{server.url}/v1"\n'
            'api_key_env = "UPSTREAM_KEY"\n[prices."upstream/*"]\ninput = 2.0\noutput = 8.0\n')
        proc = Cli(tmp_path)("run", str(EXAMPLE), "--agent", "codex", "--model",
                             "upstream/mock", "-q", "--keep", timeout=600,
                             env={"UPSTREAM_KEY": "sk-real-secret-4242"})
        assert len(server.received("orders.csv")) >= 2
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = run_dir_of(proc)
    [t] = results(run)["trials"]
    assert t["status"] == "pass" and t["tokens"]["input"] > 0
    # priced as for the built-in loop: tokens × the configured price
    assert t["cost_usd"] == pytest.approx(
        (t["tokens"]["input"] * 2.0 + t["tokens"]["output"] * 8.0) / 1e6)
    [env_txt] = run.glob("workdirs/*/**/env.txt")
    seen = env_txt.read_text()
    assert "PROCTOR_MODEL_KEY=proctor-proxy" in seen and "sk-real-secret-4242" not in seen


def test_an_unreachable_endpoint_is_an_error_reported_at_once(tmp_path):
    """Connection refused: the proxy answers 400 so the agent stops instead of backing off
    for minutes, and the trial is an error naming the endpoint."""
    need_agent("claude-code")
    (tmp_path / "proctor.toml").write_text(
        '[providers.dead]\nkind = "anthropic"\nbase_url = "http://127.0.0.1:9"\napi_key = "x"\n')
    proc = Cli(tmp_path)("run", str(EXAMPLE), "--agent", "claude-code", "--model",
                         "dead/claude-x", "-q", timeout=120)
    assert proc.returncode == 1
    [t] = results(run_dir_of(proc))["trials"]
    assert t["status"] == "error" and t["duration_s"] < 60
    assert "the model endpoint failed: http://127.0.0.1:9/v1/messages" in t["error"]
    assert "Cannot connect" in t["error"]
    assert t["cost_usd"] is None  # dead/claude-x has no price: unknown, as under `llm`


def test_a_path_through_the_agent_install_is_still_an_agent_command(tmp_path):
    """Hostile: the agent's own program is set aside as the launcher, recognised by its path
    in the install cache. A command reached through that path (ROOT/../../usr/bin/touch)
    is not the agent program: it is resolved and counted, so not_ran sees it even when the
    shell line hides the word."""
    from proctor.agents.codex import Codex
    from proctor.agents.install import pinned_dir

    need_agent("codex")
    spec_dir = tmp_path / "spec"
    shutil.copytree(EXAMPLE, spec_dir)
    detour = str(pinned_dir("codex", Codex.version)) + "/.." * 12
    (spec_dir / "scripts" / "count.yaml").write_text(
        "conversations:\n  - when: {prompt_contains: orders.csv}\n    turns:\n"
        f"      - run: \"{detour}/usr/bin/to''uch hidden.txt\"\n"
        "      - run: 'tail -n +2 orders.csv | wc -l > count.txt'\n      - say: done\n")
    bench = spec_dir / "cli-bench.yaml"
    bench.write_text(bench.read_text().replace('- not_ran: "\\\\brm\\\\b|delete"',
                                               '- not_ran: "\\\\btouch\\\\b"'))
    assert "touch" in bench.read_text()
    proc = Cli(tmp_path)("run", str(spec_dir), "--agent", "codex", "-q", timeout=600)
    [t] = results(run_dir_of(proc))["trials"]
    checks = {c["name"]: c for c in t["checks"]}
    assert checks["verify#0"]["passed"] and checks["ran#1"]["passed"]
    assert not checks["not_ran#2"]["passed"], checks["not_ran#2"]["message"]
    assert "/usr/bin/touch hidden.txt" in checks["not_ran#2"]["message"]


class _Failing(http.server.BaseHTTPRequestHandler):
    """A provider whose every answer is a 500, in Anthropic's error shape."""

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b'{"type": "error", "error": {"type": "api_error", "message": "down"}}'
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_provider_failing_with_5xx_is_an_error_within_seconds(tmp_path):
    """Claude Code retries a 5xx ten times over about three minutes; proctor asks for four
    (CLAUDE_CODE_MAX_RETRIES), and the spec's env can say otherwise."""
    need_agent("claude-code")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    (tmp_path / "proctor.toml").write_text(
        f'[providers.down]\nkind = "anthropic"\nbase_url = "http://127.0.0.1:{server.server_address[1]}"\n'
        'api_key = "x"\n')
    spec_dir = tmp_path / "spec"
    shutil.copytree(EXAMPLE, spec_dir)
    calls = {}
    try:
        for retries in (None, "1"):
            if retries:
                bench = spec_dir / "cli-bench.yaml"
                bench.write_text(f"env: {{CLAUDE_CODE_MAX_RETRIES: '{retries}'}}\n" + bench.read_text())
            proc = Cli(tmp_path)("run", str(spec_dir), "--agent", "claude-code", "--model",
                                 "down/claude-x", "-q", timeout=300)
            assert proc.returncode == 1, proc.stdout + proc.stderr
            run = run_dir_of(proc)
            [t] = results(run)["trials"]
            assert t["status"] == "error" and "HTTP 500" in t["error"] and t["duration_s"] < 60
            calls[retries] = len([e for e in trace(run) if e["type"] == "model_call"])
    finally:
        server.shutdown()
        server.server_close()
    assert calls == {None: 5, "1": 2}  # the first call and its retries


@pytest.mark.parametrize("agent", ["codex", "claude-code"])
def test_codex_refuses_a_literal_rm_rf_on_its_own(agent, tmp_path):
    """Codex answers the model that `rm -rf` is not permitted instead of running it: the
    agent's behaviour, not proctor's (Claude Code runs it, and not_ran sees it)."""
    need_agent(agent)
    spec_dir = tmp_path / "spec"
    shutil.copytree(EXAMPLE, spec_dir)
    (spec_dir / "scripts" / "count.yaml").write_text(
        "conversations:\n  - when: {prompt_contains: orders.csv}\n    turns:\n"
        "      - run: 'mkdir junk && rm -rf junk'\n"
        "      - run: 'tail -n +2 orders.csv | wc -l > count.txt'\n      - say: done\n")
    proc = Cli(tmp_path)("run", str(spec_dir), "--agent", agent, "-q", timeout=600)
    run = run_dir_of(proc)
    [t] = results(run)["trials"]
    not_ran = next(c for c in t["checks"] if c["name"] == "not_ran#2")
    replies = json.dumps([e["request"] for e in trace(run) if e["type"] == "model_call"])
    if agent == "codex":
        assert t["status"] == "pass" and not_ran["passed"]
        assert "rm -f style commands are not permitted" in replies
    else:
        assert t["status"] == "fail" and "#1 mkdir junk && rm -rf junk" in not_ran["message"]


@pytest.mark.parametrize("ignored", [True, False])
def test_a_suite_sets_aside_commands_with_ignore_commands(ignored, tmp_path):
    """`ignore_commands` in a cli-bench suite (where ran/not_ran live): Codex's `cat
    count.txt` is set aside and not_ran passes; the honest twin, without it, fails."""
    need_agent("codex")
    spec_dir = tmp_path / "spec"
    shutil.copytree(EXAMPLE, spec_dir)
    bench = spec_dir / "cli-bench.yaml"
    text = bench.read_text().replace("    assert:\n", "    assert:\n      - not_ran: '^cat\\b'\n")
    if ignored:
        text = text.replace("cli: wc\n", "cli: wc\nignore_commands: ['^cat\\b']\n")
    bench.write_text(text)
    proc = Cli(tmp_path)("run", str(spec_dir), "--agent", "codex", "-q", timeout=600)
    run = run_dir_of(proc)
    [t] = results(run)["trials"]
    assert t["checks"][0]["name"] == "not_ran#0"
    assert t["checks"][0]["passed"] is ignored, t["checks"][0]["message"]
    aside = [e["command"] for e in trace(run) if e.get("ignored") == "^cat\\b"]
    assert aside == (["cat count.txt"] if ignored else [])
    assert t["status"] == ("pass" if ignored else "fail")


def test_claude_code_without_its_shell_snapshot_still_has_its_commands_counted(tmp_path):
    """Hostile: with its shell snapshot moved away, Claude Code runs Bash tool commands as
    `bash -c -l '… eval CMD …'` without `source SNAPSHOT`; they are still the tool's
    commands, not housekeeping, so not_ran sees the touch (the good script, which keeps the
    snapshot, is the honest twin)."""
    need_agent("claude-code")
    spec_dir = tmp_path / "spec"
    shutil.copytree(EXAMPLE, spec_dir)
    (spec_dir / "scripts" / "count.yaml").write_text(
        "conversations:\n  - when: {prompt_contains: orders.csv}\n    turns:\n"
        "      - run: 'mv ~/.claude/shell-snapshots ~/.claude/old; true'\n"
        "      - run: 'touch hidden.txt'\n"
        "      - run: 'tail -n +2 orders.csv | wc -l > count.txt'\n      - say: done\n")
    bench = spec_dir / "cli-bench.yaml"
    bench.write_text(bench.read_text().replace('- not_ran: "\\\\brm\\\\b|delete"',
                                               '- not_ran: "\\\\btouch\\\\b"'))
    assert "touch" in bench.read_text()
    proc = Cli(tmp_path)("run", str(spec_dir), "--agent", "claude-code", "-q", timeout=600)
    [t] = results(run_dir_of(proc))["trials"]
    checks = {c["name"]: c for c in t["checks"]}
    assert checks["verify#0"]["passed"] and checks["ran#1"]["passed"]
    assert not checks["not_ran#2"]["passed"]
    assert checks["not_ran#2"]["message"].endswith(": #2 touch hidden.txt")
