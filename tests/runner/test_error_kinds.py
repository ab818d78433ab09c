"""Error kinds (SPEC §5 `error_kind`) through the real CLI: every `error` trial says where
it failed — `infra` (setup, sandbox, services, proctor), `provider` (the model's API after
its retries), `check` (a check itself errored) — and `--resume RUN --retry-errors KINDS`
re-runs exactly those, each replacing its line, the statistics recomputed."""

from __future__ import annotations

import json

from tests.helpers.cli import results

# Each scenario errors in one place until MARKER (a host file) exists: setup finds a program
# in proctor.toml's host_path dir; a custom check reads the marker on the host.
INFRA = """
version: 1
id: infra
task: {prompt: nothing}
agent: {type: nop}
setup: {commands: ["command -v proctor-marker"]}
invariants:
  ok: {description: ok, check: {type: file_absent, path: nothing-here}}
"""
CHECK = """
version: 1
id: check
task: {prompt: nothing}
agent: {type: nop}
invariants:
  judged: {description: judged, check: {type: custom, script: judge.sh}}
"""
PROVIDER = """
version: 1
id: provider
task: {prompt: nothing}
agent: {type: llm, model: mock/down.yaml}
invariants:
  ok: {description: ok, check: {type: file_absent, path: nothing-here}}
"""
FINE = """
version: 1
id: fine
task: {prompt: nothing}
agent: {type: nop}
invariants:
  ok: {description: ok, check: {type: file_absent, path: nothing-here}}
"""
JUDGE = """#!/bin/sh
test -f "{marker}" || {{ echo "judge broke" >&2; exit 3; }}
echo '{{"passed": true, "score": 1}}'
"""
DOWN = "turns:\n  - fail: {status: 503, times: 50}\n    say: done\n"


def _specs(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    for name, text in (("infra", INFRA), ("check", CHECK), ("provider", PROVIDER),
                       ("fine", FINE)):
        (specs / f"{name}.yaml").write_text(text)
    judge = specs / "judge.sh"
    judge.write_text(JUDGE.format(marker=tmp_path / "bin" / "proctor-marker"))
    judge.chmod(0o755)
    (specs / "down.yaml").write_text(DOWN)
    (tmp_path / "bin").mkdir()
    (tmp_path / "proctor.toml").write_text(
        f'host_path = ["{tmp_path / "bin"}"]\n[retry]\nmax_attempts = 2\nbase_delay = 0\n')


def _fix(tmp_path):
    marker = tmp_path / "bin" / "proctor-marker"
    marker.write_text("#!/bin/sh\n")
    marker.chmod(0o755)  # the sandbox user runs it


def _by_task(run_dir):
    return {t["task_id"]: t for t in results(run_dir)["trials"]}


def test_each_error_says_where_it_failed_and_reports_show_it(cli, tmp_path):
    _specs(tmp_path)
    out = cli("run", "specs", "--output-dir", "run", "-q", "--format", "junit,md,html")
    assert out.returncode == 1
    t = _by_task(tmp_path / "run")
    assert {k: (v["status"], v["error_kind"]) for k, v in t.items()} == {
        "infra": ("error", "infra"), "check": ("error", "check"),
        "provider": ("error", "provider"), "fine": ("pass", None)}
    assert "setup command failed" in t["infra"]["error"]
    # not only infra: no line offering to retry them all
    assert "were infrastructure failures" not in out.stdout
    shown = cli("show", "run", t["infra"]["id"]).stdout
    assert "error (infra): setup command failed" in shown
    junit = (tmp_path / "run" / "junit.xml").read_text()
    for kind in ("infra", "check", "provider"):
        assert f'type="{kind}"' in junit
    html = (tmp_path / "run" / "report.html").read_text()
    assert 'class="kind"' in html and ">provider</span>" in html
    md = (tmp_path / "run" / "summary.md").read_text()
    assert "<code>check</code>" in md


def test_retry_errors_reruns_only_those_kinds_replacing_their_lines(cli, tmp_path):
    _specs(tmp_path)
    cli("run", "specs", "--output-dir", "run", "-q")
    before = _by_task(tmp_path / "run")
    _fix(tmp_path)  # the infrastructure and the judge work now; the provider is still down
    out = cli("run", "--resume", "run", "--retry-errors", "infra,check", "-q")
    assert out.returncode == 1, out.stdout + out.stderr
    after = _by_task(tmp_path / "run")
    assert {k: v["status"] for k, v in after.items()} == {
        "infra": "pass", "check": "pass", "provider": "error", "fine": "pass"}
    assert after["provider"]["started_at"] == before["provider"]["started_at"]  # not re-run
    assert after["fine"]["started_at"] == before["fine"]["started_at"]
    r = results(tmp_path / "run")
    assert (r["summary"]["passed"], r["summary"]["errored"]) == (3, 1)
    lines = [json.loads(x)["id"] for x in (tmp_path / "run" / "results.jsonl").read_text()
             .splitlines()]
    assert sorted(lines) == sorted(set(lines)) and len(lines) == 4  # each replaced, once


def test_a_run_whose_only_errors_were_infra_says_how_to_retry_them(cli, tmp_path):
    _specs(tmp_path)
    out = cli("run", "specs/infra.yaml", "specs/fine.yaml", "--output-dir", "run", "-q")
    assert out.returncode == 1
    [line] = [x for x in out.stdout.splitlines() if "infrastructure failures" in x]
    assert line == ("all 1 error(s) were infrastructure failures, not the agent's: "
                    "proctor run --resume run --retry-errors infra runs them again")
    _fix(tmp_path)
    again = cli("run", "--resume", "run", "--retry-errors", "infra", "-q")
    assert again.returncode == 0, again.stdout + again.stderr


def test_retry_errors_is_a_usage_error_without_resume_or_with_an_unknown_kind(cli, spec):
    spec(FINE)
    out = cli("run", "spec.yaml", "--retry-errors", "infra")
    assert out.returncode == 2 and "give --resume RUN_DIR" in out.stderr
    out = cli("run", "--resume", "nowhere", "--retry-errors", "network")
    assert out.returncode == 2 and "unknown error kind 'network'" in out.stderr
