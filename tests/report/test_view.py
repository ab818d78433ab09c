"""`proctor view`: the real server on a loopback port, read over real HTTP."""

from __future__ import annotations

import http.client
import json
import re
import signal
import socket
import threading
from pathlib import Path

import pytest

from proctor.report.view import make_server
from proctor.report.view_runs import legacy_key
from proctor.store import by_agent, index_run
from tests.helpers.cli import Cli
from tests.helpers.report import FLAKY_TRIAL, counted, write_run

SPECS = ["/work/bench/git-suite.yaml"]
SUITE = {"key": "a1b2c3d4e5f6", "version": "v1", "name": "bench/git-suite.yaml"}


def _index(run_dir: Path, started: str, specs=SPECS, suite=SUITE, agents=None) -> str:
    """Index a fixture run as `proctor run` does: its suite, each agent's figures."""
    res = json.loads((run_dir / "results.json").read_text())
    models = res["models"]
    index_run(res["run_id"], run_dir, started_at=started, status="failed", specs=specs,
              finished_at=started, summary=res["summary"], suite=suite,
              models=[m["model"] or f"({m['agent']})" for m in models],
              by_agent=agents or by_agent(models))
    return res["run_id"]


class Served:
    def __init__(self, runs_dir: Path | None = None):
        self.server = make_server(runs_dir, "127.0.0.1", 0)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def get(self, path: str, host: str | None = None) -> tuple[int, dict, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("GET", path, headers={"Host": host or f"127.0.0.1:{self.port}"})
        r = conn.getresponse()
        body = r.read().decode()
        conn.close()
        return r.status, dict(r.getheaders()), body

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def served():
    servers: list[Served] = []

    def start(runs_dir: Path | None = None) -> Served:
        servers.append(Served(runs_dir))
        return servers[-1]
    yield start
    for s in servers:
        s.close()


def test_lists_runs_and_serves_each_report_with_its_trajectories(mixed_run, served):
    run_id = _index(mixed_run, "2026-03-02T10:15:00+00:00")
    site = served()
    status, headers, body = site.get("/")
    assert status == 200 and headers["Content-Security-Policy"].startswith("default-src 'none'")
    assert f'href="/runs/{run_id}/"' in body and "llm · openai/gpt-4.1" in body
    assert f'href="/suites/{SUITE["key"]}"' in body and "git-suite.yaml" in body
    status, headers, page = site.get(f"/runs/{run_id}/")
    # no report.html in the run: rendered on the fly, trajectories included
    assert status == 200 and page.startswith("<!DOCTYPE html>") and 'id="trajectories"' in page
    assert "script-src 'unsafe-inline'" in headers["Content-Security-Policy"]
    status, headers, _ = site.get(f"/runs/{run_id}")
    assert status == 301 and headers["Location"] == f"/runs/{run_id}/"
    # the report's links to a trial's logs work, as plain text
    status, headers, trace = site.get(f"/runs/{run_id}/trials/{FLAKY_TRIAL}/trace.jsonl")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    assert json.loads(trace.splitlines()[0])["type"] == "model_call"


def test_serves_nothing_else(mixed_run, served):
    run_id = _index(mixed_run, "2026-03-02T10:15:00+00:00")
    site = served()
    for path in (f"/runs/{run_id}/run.json", f"/runs/{run_id}/trials/{FLAKY_TRIAL}/../../run.json",
                 f"/runs/{run_id}/trials/..%2F..%2Frun.json/trace.jsonl",
                 f"/runs/{run_id}/trials/{FLAKY_TRIAL}/results.json", "/runs/nope/",
                 f"/runs/{run_id}/trials/../", f"/runs/{run_id}/trials/%2e%2e/",
                 f"/runs/{run_id}/trials/{FLAKY_TRIAL}/vs/nope/{FLAKY_TRIAL}",
                 f"/runs/nope/trials/{FLAKY_TRIAL}/",
                 "/etc/passwd", "/suites/0000"):
        status, _, _ = site.get(path)
        assert status == 404, path
    # a page asked for under another name (DNS rebinding) is refused
    assert site.get("/", host="attacker.example:80")[0] == 421
    assert site.get("/", host=f"localhost:{site.port}")[0] == 200


def test_suite_pass_rate_per_agent_over_time(tmp_path, served):
    m1, m2 = "openai/gpt-4.1", "anthropic/claude-sonnet-4-5"
    ids = []
    for day, (p1, p2) in enumerate([(2, 1), (3, 2), (4, 4)]):
        run = write_run(tmp_path, f"run-{day}", counted("t1", m1, p1, 4, f"a{day}")
                        + counted("t1", m2, p2, 4, f"b{day}"))
        ids.append(_index(run, f"2026-03-0{day + 1}T10:00:00+00:00"))
    other = write_run(tmp_path, "other", counted("t9", m1, 1, 1, "o"))
    _index(other, "2026-03-05T10:00:00+00:00", suite={**SUITE, "key": "ffffffffffff"})
    status, _, page = served().get(f"/suites/{SUITE['key']}")
    assert status == 200 and "3 runs" in page and "other" not in page
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert svg.count("<polyline") == 2  # one line per agent and model
    assert svg.count("<circle") == 6  # one point per run and agent, each a link to its run
    assert f'<a href="/runs/{ids[0]}/">' in svg and "llm · openai/gpt-4.1: 2/4 (50%)" in svg
    assert "llm · anthropic/claude-sonnet-4-5: 4/4 (100%)" in svg
    # oldest left, newest right; higher pass rate, higher point (smaller y)
    points = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', svg)
    xs = [float(x) for x, _ in points[:3]]
    ys = [float(y) for _, y in points[:3]]
    assert xs == sorted(xs) and ys == sorted(ys, reverse=True)
    assert "http" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_a_trend_never_mixes_agents(tmp_path, served):
    """llm at 2/3, then Claude Code on the same model at 3/3: two lines of one point each,
    not a "67% → 100%" trend that is only a change of agent."""
    model = "mock/m"
    first = write_run(tmp_path, "llm-run", counted("t1", model, 2, 3, "l"))
    second = write_run(tmp_path, "cc-run", counted("t1", model, 3, 3, "c"))
    _index(first, "2026-03-01T10:00:00+00:00")
    _index(second, "2026-03-02T10:00:00+00:00", agents={f"claude-code:{model}": {
        "agent": "claude-code", "model": model, "passed": 3, "trials": 3, "errored": 0}})
    _, _, page = served().get(f"/suites/{SUITE['key']}")
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert "<polyline" not in svg and svg.count("<circle") == 2
    assert "llm · mock/m: 2/3" in svg and "claude-code · mock/m: 3/3" in svg
    heads = re.findall(r'<th class="n">([^<]*)</th>', page)
    assert heads == ["llm · mock/m", "claude-code · mock/m"]


def test_a_changed_suite_breaks_its_trend(tmp_path, served):
    m = "openai/gpt-4.1"
    for day, version in enumerate(["v1", "v1", "v2"]):
        run = write_run(tmp_path, f"run-{day}", counted("t1", m, day + 1, 4, f"a{day}"))
        _index(run, f"2026-03-0{day + 1}T10:00:00+00:00", suite={**SUITE, "version": version})
    _, _, page = served().get(f"/suites/{SUITE['key']}")
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert svg.count("<polyline") == 1 and svg.count("<circle") == 3  # v2 stands alone
    assert svg.count('class="change"') == 1 and "the suite changed here" in svg
    assert page.count("(suite changed)") == 1  # run-2 against run-1


def test_the_index_is_searched_and_filtered_and_tells_error_from_fail(tmp_path, served):
    from tests.helpers.report import trial

    m = "openai/gpt-4.1"
    ok = write_run(tmp_path, "all-pass", counted("t1", m, 2, 2, "p"))
    bad = write_run(tmp_path, "some-fail", counted("t1", m, 1, 2, "f"))
    broke = write_run(tmp_path, "provider-down", [trial("t1.e.r0", "t1", "error", model=m,
                                                        error="provider error 529")])
    _index(ok, "2026-03-01T10:00:00+00:00")
    _index(bad, "2026-03-02T10:00:00+00:00", suite={**SUITE, "key": "0123456789ab",
                                                    "name": "other/suite.yaml"})
    _index(broke, "2026-03-03T10:00:00+00:00", agents={f"codex:{m}": {
        "agent": "codex", "model": m, "passed": 0, "trials": 1, "errored": 1}})
    site = served()

    def shown(query: str) -> list[str]:
        status, _, body = site.get("/?" + query)
        assert status == 200
        return re.findall(r'<tr data-outcome="[^"]*"><td><code><a href="/runs/([^/]+)/', body)

    _, _, body = site.get("/")
    assert '<td class="errored">errored</td>' in body and '<td class="failed">failed</td>' in body
    assert "1 errored" in body and "1 failed" in body
    assert shown("") == ["provider-down", "some-fail", "all-pass"]
    assert shown("status=errored") == ["provider-down"]
    assert shown("status=failed") == ["some-fail"]
    assert shown("status=passed") == ["all-pass"]
    assert shown("agent=codex") == ["provider-down"]
    assert shown("agent=llm&model=openai%2Fgpt-4.1") == ["some-fail", "all-pass"]
    assert shown(f"suite={SUITE['key']}") == ["provider-down", "all-pass"]
    assert shown("q=other+suite") == ["some-fail"]
    assert shown("since=2026-03-02&until=2026-03-02") == ["some-fail"]
    # the form keeps what was asked
    _, _, body = site.get("/?status=errored&q=%3Cx%3E")
    assert '<option value="errored" selected>' in body and 'value="&lt;x&gt;"' in body


def test_a_runs_dir_shows_its_runs_indexed_or_not(tmp_path, served):
    runs = tmp_path / "artifacts"
    runs.mkdir()
    run = write_run(runs, "ci-run", counted("t1", "openai/gpt-4.1", 1, 2, "c"))
    elsewhere = write_run(tmp_path, "elsewhere", counted("t1", "openai/gpt-4.1", 1, 1, "e"))
    _index(elsewhere, "2026-03-02T10:15:00+00:00")
    site = served(runs)
    _, _, body = site.get("/")
    assert "ci-run" in body and ">1/2</span> · <span class=\"failed\">1 failed" in body
    assert "elsewhere" not in body
    status, _, page = site.get("/runs/ci-run/")
    assert status == 200 and "proctor run ci-run" in page
    assert run.is_dir()


@pytest.mark.slow
def test_the_command_binds_to_loopback_and_stops_on_ctrl_c(tmp_path):
    proc = Cli(tmp_path).popen("view", "--port", "0")
    try:
        line = proc.stdout.readline()
        m = re.match(r"proctor view: http://127\.0\.0\.1:(\d+)/", line)
        assert m, line
        conn = http.client.HTTPConnection("127.0.0.1", int(m.group(1)), timeout=10)
        conn.request("GET", "/")
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0 and "Traceback" not in err
    with socket.socket() as busy:  # a port in use: one line, exit 2
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = Cli(tmp_path)("view", "--port", str(busy.getsockname()[1]), timeout=10)
    assert taken.returncode == 2 and taken.stderr.count("\n") == 1
    assert taken.stderr.startswith("proctor: cannot listen on 127.0.0.1:")


def test_a_run_still_going_shows_its_finished_trials(mixed_run, served):
    run_id = _index(mixed_run, "2026-03-02T10:15:00+00:00")
    (mixed_run / "results.json").unlink()  # as while the run goes: results.jsonl only
    status, _, page = served().get(f"/runs/{run_id}/")
    assert status == 200 and page.count('<tbody data-id="') == 44
    assert "Incomplete run" in page  # said, not left to guess
    status, _, page = served().get(f"/runs/{run_id}/trials/{FLAKY_TRIAL}/")
    assert status == 200 and "trial 8 of 44" in page  # its finished trials, one by one


def test_each_run_of_a_suite_compares_with_the_one_before(tmp_path, served):
    m = "openai/gpt-4.1"
    old = write_run(tmp_path, "old", counted("t1", m, 10, 10, "a") + counted("t2", m, 5, 10, "a"))
    new = write_run(tmp_path, "new", counted("t1", m, 1, 10, "b") + counted("t2", m, 5, 10, "b"))
    _index(old, "2026-03-01T10:00:00+00:00")
    _index(new, "2026-03-02T10:00:00+00:00")
    site = served()
    _, _, suite = site.get(f"/suites/{SUITE['key']}")
    assert suite.count("vs previous") == 1 and 'href="/compare/old/new"' in suite
    status, _, page = site.get("/compare/old/new")
    assert status == 200 and "2 significant regression(s)" in page  # t1 and the model
    row = next(r for r in page.split("<tr>") if r.startswith("<td>t1 · "))
    assert "10/10" in row and "1/10" in row and "REGRESSION" in row
    # each task row sets a trial of A beside one of B: B's first failing one
    pair = re.search(r'<a href="([^"]+)">side by side</a>', row)[1]
    assert pair == "/runs/old/trials/t1.a.r0/vs/new/t1.b.r1"
    status, _, side = site.get(pair)
    assert status == 200 and "A: llm · openai/gpt-4.1" in side and 'id="side-b"' in side
    assert site.get("/compare/old/nope")[0] == 404


def test_a_run_indexed_before_suites_keeps_its_paths_as_typed(mixed_run, served):
    res = json.loads((mixed_run / "results.json").read_text())
    index_run(res["run_id"], mixed_run, started_at="2026-03-02T10:15:00+00:00",
              status="failed", specs=["."], summary=res["summary"],
              by_model={"openai/gpt-4.1": [3, 4]})  # no suite, no agents: an old row
    _, _, body = served().get("/")
    assert f'href="/suites/{legacy_key(["."])}">.</a>' in body and "openai/gpt-4.1" in body


@pytest.mark.slow
def test_a_suite_is_its_resolved_files_and_check_runs_are_no_trend(tmp_path, served):
    """`proctor run .`, `proctor run cli-bench.yaml` and `proctor run suite/` from another
    directory are one suite; the same file name elsewhere is another; `proctor check`'s
    runs are not indexed at all."""

    suite = tmp_path / "suite"
    suite.mkdir()
    spec = ("cli: echo\ntasks:\n  - id: hi\n    intent: say hi\n    solution: ['echo hi']\n"
            "    assert: [{output_contains: hi}]\n")
    (suite / "cli-bench.yaml").write_text(spec)
    twin = tmp_path / "twin" / "suite"
    twin.mkdir(parents=True)
    (twin / "cli-bench.yaml").write_text(spec)
    cli = Cli()

    def run(cwd: Path, *args: str) -> None:
        done = cli(*args, cwd=cwd)
        assert done.returncode == 0, done.stdout + done.stderr

    run(suite, "run", ".", "--agent", "oracle", "-q")
    run(suite, "run", "cli-bench.yaml", "--agent", "oracle", "-q")
    run(tmp_path, "run", "suite/", "--agent", "oracle", "-q")
    run(twin, "run", ".", "--agent", "oracle", "-q")
    run(suite, "check", ".")
    site = served()
    _, _, body = site.get("/")
    keys = re.findall(r'href="/suites/([0-9a-f]+)"', body)
    assert len(keys) == 4 and len(set(keys)) == 2  # check's two runs are not there
    assert keys.count(keys[-1]) == 3  # the first three (listed last): one suite
    _, _, page = site.get(f"/suites/{keys[-1]}")
    assert "3 runs" in page and "oracle" in page and "(suite changed)" not in page


def _links(page: str, rel: str) -> list[str]:
    return re.findall(rf'<a rel="{rel}" href="([^"]+)"', page)


def test_each_trial_has_a_page_and_next_walks_failing_first(mixed_run, served):
    """Issue 38: trials only expanded inline on one long page. Each has a page of its own
    (a deep link), and next / previous walk the run: failed, then errored, then passed."""
    run_id = _index(mixed_run, "2026-03-02T10:15:00+00:00")
    site = served()
    results = json.loads((mixed_run / "results.json").read_text())
    status_of = {t["id"]: t["status"] for t in results["trials"]}
    status, headers, page = site.get(f"/runs/{run_id}/trials/{FLAKY_TRIAL}/")
    assert status == 200 and "script-src 'unsafe-inline'" in headers["Content-Security-Policy"]
    assert f"<code>{FLAKY_TRIAL}</code>" in page and "git-branch [injected]" in page
    assert "<b>Why:</b> output_contains#1: &#x27;feature&#x27; not in stdout" in page
    assert 'id="trajectories"' in page and "Traj.draw" in page  # drawn by the report's code
    assert f'href="/runs/{run_id}/trials/{FLAKY_TRIAL}/trace.jsonl"' in page
    assert '<a href="/">all runs</a>' in page and f'href="/runs/{run_id}/"' in page
    assert "<script>alert" not in page  # hostile output is text
    # from the first trial, next walks every trial once: failed, errored, passed
    first = f"/runs/{run_id}/trials/jq-filter.openai-gpt-4.1.injected.r0/"
    _, _, page = site.get(first)
    assert _links(page, "prev") == [] and "trial 1 of 44" in page
    walked, at = [], first
    while True:
        walked.append(at.split("/")[-2])
        _, _, page = site.get(at)
        nxt = _links(page, "next")
        if not nxt:
            break
        assert _links(site.get(nxt[0])[2], "prev") == [at]  # and back
        at = nxt[0]
    assert sorted(walked) == sorted(status_of) and "trial 44 of 44" in page
    ranks = [{"fail": 0, "error": 1, "pass": 2}[status_of[t]] for t in walked]
    assert ranks == sorted(ranks) and ranks.count(0) == 16 and ranks.count(1) == 3
    # an unknown trial, a missing slash
    assert site.get(f"/runs/{run_id}/trials/nope/")[0] == 404
    status, headers, _ = site.get(f"/runs/{run_id}/trials/{FLAKY_TRIAL}")
    assert status == 301 and headers["Location"].endswith(f"/trials/{FLAKY_TRIAL}/")


def test_the_report_in_the_view_leads_to_all_runs_and_each_trials_page(mixed_run, served):
    run_id = _index(mixed_run, "2026-03-02T10:15:00+00:00")
    status, _, page = served().get(f"/runs/{run_id}/")
    assert status == 200
    bar = page[page.index('<nav class="view-bar">'):page.index("</nav>")]
    assert '<a href="/">all runs</a>' in bar and f'href="/suites/{SUITE["key"]}"' in bar
    assert f'href="/runs/{run_id}/trials/jq-filter.openai-gpt-4.1.injected.r0/"' in bar
    assert page.index("view-bar") < page.index("<header>")  # on top
    assert f'href="trials/{FLAKY_TRIAL}/">its own page' in page
    assert ".viewonly{display:inline}" in page
    # report.html itself stays a file of its own: no bar, the page links hidden
    from proctor.report import write_reports

    (path,) = write_reports(mixed_run, json.loads((mixed_run / "results.json").read_text()),
                            ["html"])
    alone = path.read_text()
    assert "view-bar" not in alone and ".viewonly{display:none}" in alone


def test_two_trials_of_a_task_side_by_side(tmp_path, served):
    """Two agents in one run, and the same agent in an earlier run: a trial's page offers
    both; the pair page has each one's verdict, checks and trajectory in a column."""
    from tests.helpers.report import check, trial

    def attempt(tid: str, agent: str, ok: bool) -> dict:
        return trial(tid, "count", "pass" if ok else "fail", model="mock/m", agent=agent,
                     checks=[check("verify#0", "verify", ok, "" if ok else "expected '3', got '4'"),
                             check("ran#1", "ran", True)])

    before = write_run(tmp_path, "before", [attempt("count.codex.r0", "codex", True)])
    now = write_run(tmp_path, "now", [attempt("count.claude-code.r0", "claude-code", False),
                                      attempt("count.codex.r0", "codex", True)])
    _index(before, "2026-03-01T10:00:00+00:00")
    _index(now, "2026-03-02T10:00:00+00:00")
    site = served()
    _, _, page = site.get("/runs/now/trials/count.claude-code.r0/")
    beside = page[page.index('id="beside"'):]
    pair = "/runs/now/trials/count.claude-code.r0/vs/now/count.codex.r0"
    earlier = "/runs/now/trials/count.claude-code.r0/vs/before/count.codex.r0"
    assert f'href="{pair}">codex · mock/m · replica 0</a>' in beside
    assert f'href="{earlier}"' in beside and "In run <code>before</code>" in beside
    # the earlier run offers nothing later than itself (and has no other trial)
    assert 'id="beside"' not in site.get("/runs/before/trials/count.codex.r0/")[2]
    status, headers, page = site.get(pair)
    assert status == 200 and "script-src 'unsafe-inline'" in headers["Content-Security-Policy"]
    a = page[page.index('id="side-a"'):page.index('id="side-b"')]
    b = page[page.index('id="side-b"'):]
    assert "A: claude-code · mock/m" in a and '<span class="badge fail">' in a
    assert "B: codex · mock/m" in b and '<span class="badge pass">' in b
    assert "expected &#x27;3&#x27;, got &#x27;4&#x27;" in a and "got" not in b.split("Checks")[1]
    verdicts = page[page.index('class="verdicts'):page.index("</table>")]
    row = verdicts[verdicts.index("verify#0"):verdicts.index("ran#1")]
    assert row.index("badge fail") < row.index("badge pass")  # A failed it, B passed
    assert 'href="/runs/now/trials/count.codex.r0/vs/now/count.claude-code.r0">swap' in page
    assert site.get("/runs/now/trials/count.claude-code.r0/vs/now/nope")[0] == 404


def test_trend_dates_never_overlap(tmp_path, served):
    """Issue 38: the trend's dates printed over each other when runs came close together."""
    from proctor.report.view_trend import LABEL_W

    times = ["2026-03-01T10:00", "2026-03-01T10:01", "2026-03-01T10:02", "2026-03-01T10:30",
             "2026-03-02T09:00", "2026-03-02T09:01", "2026-03-05T10:00", "2026-03-05T10:01",
             "2026-03-05T10:02", "2026-03-05T10:03", "2026-03-05T10:04", "2026-03-09T08:00"]
    for i, when in enumerate(times):
        run = write_run(tmp_path, f"run-{i:02}", counted("t1", "openai/gpt-4.1", i % 4, 3, f"a{i}"))
        _index(run, when + ":00+00:00")
    _, _, page = served().get(f"/suites/{SUITE['key']}")
    svg = page[page.index("<svg"):page.index("</svg>")]
    dates = re.findall(r'<text x="([\d.]+)" [^>]*class="axis date">([^<]+)<', svg)
    xs = [float(x) for x, _ in dates]
    assert len(dates) >= 4 and all(b - a >= LABEL_W for a, b in zip(xs, xs[1:], strict=False))
    assert dates[-1][1] == "03-09 08:00"  # the newest run always has its date
    points = [float(x) for x in re.findall(r'<circle cx="([\d.]+)"', svg)]
    gaps = [b - a for a, b in zip(points, points[1:], strict=False)]
    assert len(points) == 12 and min(gaps) > 30  # a burst of runs is not one smudge


def test_the_index_charts_pass_rate_per_suite_agent_and_model(tmp_path, served):
    m = "mock/m"
    other = {**SUITE, "key": "0123456789ab", "name": "other/suite.yaml"}
    for day in range(3):
        run = write_run(tmp_path, f"run-{day}", counted("t1", m, day + 1, 3, f"a{day}"))
        _index(run, f"2026-03-0{day + 1}T10:00:00+00:00", agents={
            f"claude-code:{m}": {"agent": "claude-code", "model": m, "passed": day + 1,
                                 "trials": 3, "errored": 0},
            f"codex:{m}": {"agent": "codex", "model": m, "passed": 3 - day, "trials": 3,
                           "errored": 0}})
        run = write_run(tmp_path, f"other-{day}", counted("t2", m, 1, 2, f"o{day}"))
        _index(run, f"2026-03-0{day + 1}T11:00:00+00:00", suite=other)
    site = served()
    _, _, page = site.get("/")
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert svg.count("<polyline") == 3 and svg.count("<circle") == 9
    legend = re.findall(r"<span><i [^>]*></i>([^<]+)</span>", page)
    assert sorted(legend) == ["bench/git-suite.yaml · claude-code · mock/m",
                              "bench/git-suite.yaml · codex · mock/m",
                              "other/suite.yaml · llm · mock/m"]
    assert "bench/git-suite.yaml · codex · mock/m: 1/3 (33%) · run run-2" in svg
    # the chart follows the filters
    _, _, page = site.get("/?agent=codex")
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert svg.count("<polyline") == 2  # the runs shown: their lines (claude-code ran there too)
    _, _, page = site.get("/?suite=0123456789ab")
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert svg.count("<polyline") == 1 and "other/suite.yaml · llm · mock/m" in svg


def test_a_runs_dir_is_read_again_when_a_run_changes(tmp_path, served):
    """The server keeps what it read of each run (a large results.json takes a second to
    read, and every page asks for the runs) until the run's files change."""
    import os

    runs = tmp_path / "artifacts"
    run = write_run(runs, "ci-run", counted("t1", "openai/gpt-4.1", 1, 2, "c"))
    site = served(runs)
    assert ">1/2</span>" in site.get("/")[2]
    assert site.get("/runs/ci-run/trials/t1.c.r1/")[0] == 200
    again = write_run(tmp_path / "new", "ci-run", counted("t1", "openai/gpt-4.1", 3, 3, "d"))
    os.replace(again / "results.json", run / "results.json")
    st = (run / "results.json").stat()
    os.utime(run / "results.json", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert ">3/3</span>" in site.get("/")[2]
    assert site.get("/runs/ci-run/trials/t1.c.r1/")[0] == 404  # gone with the old results
    assert site.get("/runs/ci-run/trials/t1.d.r2/")[0] == 200
