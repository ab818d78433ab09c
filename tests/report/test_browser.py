"""report.html and `proctor view` in a real browser: headless Chromium driven by Selenium
(Debian's `chromium` and `chromium-driver`, installed by ./setup.sh).

Each test fails on any error in the browser's console and saves screenshots, test
artefacts for CI: under $PROCTOR_TEST_ARTIFACTS/screenshots/TEST/ when set, else
test-artifacts/screenshots/TEST/ in the repository (git ignores it). Without Chromium the
tests skip, except in CI (`CI` set, as CI services and .ci/run do): there a missing browser
is a failure, so the tests cannot silently stop running."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from proctor.report import write_reports
from tests.helpers import REPO
from tests.helpers.report import FLAKY_TRIAL, REAL_CAREFUL
from tests.report.test_trajectories import WRONG

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
MISSING = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
if MISSING and os.environ.get("CI"):
    pytest.fail(f"CI is set but {', '.join(MISSING)} is missing: run ./setup.sh (Debian "
                "packages `chromium` and `chromium-driver`)", pytrace=False)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(MISSING),
                       reason="Chromium is not installed (Debian packages `chromium` and "
                              "`chromium-driver`; ./setup.sh installs them)"),
]


@pytest.fixture
def shots(request) -> Path:
    base = os.environ.get("PROCTOR_TEST_ARTIFACTS")
    root = Path(base) if base else REPO / "test-artifacts"
    d = root / "screenshots" / request.node.name
    shutil.rmtree(d, ignore_errors=True)  # this run's screenshots only
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture
def browser(shots):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    # Debian's browser and driver, both given: selenium never looks for (or downloads) one.
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1000"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.implicitly_wait(0)
    yield driver
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    driver.quit()
    assert errors == [], errors  # no console errors, whatever the test did


def wait_for(fn, timeout: float = 10.0):
    end = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def _report(run_dir: Path) -> Path:
    results = json.loads((run_dir / "results.json").read_text())
    (path,) = write_reports(run_dir, results, ["html"])
    return path


def _body(driver, trial_id: str):
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, f'#trials tbody[data-id="{trial_id}"]')


def _open_trajectory(driver, trial_id: str):
    from selenium.webdriver.common.by import By

    tb = _body(driver, trial_id)
    tb.find_element(By.CSS_SELECTOR, "tr.trial").click()
    return wait_for(lambda: tb.find_elements(By.CSS_SELECTOR, ".traj .step")) and tb


def _visible_ids(driver) -> list[str]:
    return driver.execute_script(
        "return Array.prototype.filter.call(document.getElementById('trials').tBodies,"
        "function(b){return !b.hidden;}).map(function(b){return b.dataset.id;});")


def test_a_failed_trials_trajectory_opens_and_reads(mixed_run, browser, shots):
    from selenium.webdriver.common.by import By

    browser.get(_report(mixed_run).as_uri())
    browser.save_screenshot(str(shots / "1-report.png"))
    tb = _open_trajectory(browser, FLAKY_TRIAL)
    traj = tb.find_element(By.CSS_SELECTOR, ".traj")
    steps = traj.find_elements(By.CSS_SELECTOR, ".step")
    assert [s.get_attribute("class") for s in steps] == ["step turn", "step", "step output"]
    # the call, and in it the command it caused; then a command no call asked for
    call = steps[0].find_element(By.CSS_SELECTOR, ".call")
    assert call.find_element(By.CSS_SELECTOR, ".line").text == \
        "→ run_command: git switch -c feature"
    assert call.find_element(By.CSS_SELECTOR, ".cmd").get_attribute("class") == "cmd ok"
    assert steps[1].find_element(By.CSS_SELECTOR, ".cmd").get_attribute("class") == "cmd bad"
    text = traj.text
    assert "◆ openai/gpt-4.1 · 1.2k in / 40 out · 0.80s" in text
    assert "$ git branch" in text and "exit 1" in text and "line 39" in text
    assert "Switched to a new branch 'feature'" in text
    assert "http_call mail POST /send → 200" in text  # the audit log
    # hostile agent output is text on the page, never markup or script
    assert '<script>alert("pwned")</script>' in text
    assert browser.execute_script("return document.querySelectorAll('.traj script').length") == 0
    browser.execute_script("arguments[0].scrollIntoView()", tb)
    browser.save_screenshot(str(shots / "2-trajectory.png"))


def test_a_real_runs_report_answers_its_questions(real_run, browser, shots):
    """report.html as `proctor run --format html` wrote it (report.html alone, copied out of
    the run directory, as downloaded from CI): does --help help, what failed and why."""
    from selenium.webdriver.common.by import By

    alone = shots / "report.html"
    shutil.copy(real_run / "report.html", alone)
    browser.get(alone.as_uri())
    browser.save_screenshot(str(shots / "1-report.png"))
    # does --help help? each model's table row: baseline, mode, Δ with its interval
    rows = browser.find_elements(By.CSS_SELECTOR, "#help-modes tbody tr")
    careful = [c.text for c in rows[0].find_elements(By.TAG_NAME, "td")]
    assert careful[:7] == [f"llm · {REAL_CAREFUL}", "injected", "6/6 (100%)", "none", "3/6 (50%)", "-50",
                           "-81 to 0"] and careful[8] == "0.182"
    browser.execute_script("arguments[0].scrollIntoView()", rows[0])
    browser.save_screenshot(str(shots / "2-help-modes.png"))
    # the heat-map cell of the careful model without --help: its three failed trials
    cell = next(c for c in browser.find_elements(By.CSS_SELECTOR, ".heat td.cell")
                if c.get_attribute("data-label") == f"init-repo [none] · llm · {REAL_CAREFUL}")
    assert "0% 0/3" in cell.text
    cell.click()
    shown = _visible_ids(browser)
    assert len(shown) == 3 and all(".none." in i and "careful" in i for i in shown)
    # its trajectory: what the model was told and did, the command and its output, why
    tb = _open_trajectory(browser, shown[0])
    traj = tb.find_element(By.CSS_SELECTOR, ".traj")
    assert "→ run_command: echo nothing" in traj.text and "$ echo nothing" in traj.text
    assert "exit 0" in traj.text and "Create a new git repository" in traj.text
    checks = tb.find_element(By.CSS_SELECTOR, "table.checks").text
    assert "file not found: .git/HEAD; the workspace holds: nothing" in checks
    assert "/proctor-" not in browser.find_element(By.TAG_NAME, "body").text
    browser.execute_script("arguments[0].scrollIntoView()", tb)
    browser.save_screenshot(str(shots / "3-trajectory.png"))
    assert sorted(p.name for p in shots.glob("*.png")) == [
        "1-report.png", "2-help-modes.png", "3-trajectory.png"]


def test_a_heat_map_click_filters_the_trials(mixed_run, browser, shots):
    from selenium.webdriver.common.by import By

    browser.get(_report(mixed_run).as_uri())
    assert len(_visible_ids(browser)) == 44
    cell = next(c for c in browser.find_elements(By.CSS_SELECTOR, ".heat td.cell")
                if c.get_attribute("data-label") ==
                "git-branch [injected] · llm · anthropic/claude-sonnet-4-5")
    cell.click()
    shown = _visible_ids(browser)
    assert sorted(shown) == [f"git-branch.anthropic-claude-sonnet-4-5.injected.r{i}"
                             for i in range(3)]
    assert browser.find_element(By.ID, "shown").text == "3"
    chip = browser.find_element(By.ID, "fcell")
    assert chip.is_displayed() and "git-branch [injected]" in chip.text
    browser.save_screenshot(str(shots / "1-filtered.png"))
    # the filter combines with the others: failed only
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.ID, "fstatus")).select_by_value("fail")
    assert _visible_ids(browser) == [FLAKY_TRIAL]
    Select(browser.find_element(By.ID, "fstatus")).select_by_value("")
    cell.click()  # again: everything
    assert len(_visible_ids(browser)) == 44 and not chip.is_displayed()
    # the failing-checks list opens its example trial in the table
    link = browser.find_element(By.CSS_SELECTOR, f'a[data-show-trial="{FLAKY_TRIAL}"]')
    link.click()
    tb = _body(browser, FLAKY_TRIAL)
    assert "open" in tb.get_attribute("class")
    wait_for(lambda: tb.find_elements(By.CSS_SELECTOR, ".traj .step"))


def test_why_an_external_agents_trial_failed_is_on_one_screen(agent_run, browser, shots):
    """A real Claude Code, Codex or mini-swe-agent trial, opened in report.html at 1400×1000:
    the cause, the checks and the turn whose command went wrong fit the first screen; the
    system prompt (Claude Code's: 8 kB) and the agent's housekeeping are folded, one line
    each, and open on a click."""
    from selenium.webdriver.common.by import By

    _, run_dir = agent_run
    alone = shots / "report.html"  # report.html alone, as downloaded from CI
    shutil.copy(run_dir / "report.html", alone)
    browser.get(alone.as_uri())
    tid = browser.find_element(By.CSS_SELECTOR, "#trials tbody").get_attribute("data-id")
    tb = _open_trajectory(browser, tid)
    browser.execute_script("arguments[0].scrollIntoView()", tb)
    height = browser.execute_script("return window.innerHeight")

    def on_screen(el) -> bool:
        box = browser.execute_script("return arguments[0].getBoundingClientRect()", el)
        return box["top"] >= 0 and box["bottom"] <= height

    why = tb.find_element(By.CSS_SELECTOR, "p.why")
    assert why.text.startswith("Why: failed: verify#0:") and "but '4'" in why.text
    assert len(tb.find_elements(By.CSS_SELECTOR, "p.why")) == 1  # said once
    cmd = next(c for c in tb.find_elements(By.CSS_SELECTOR, ".traj .call .cmd")
               if f"$ {WRONG}" in c.text)
    line = cmd.find_element(By.XPATH, "./ancestor::div[@class='call']/div[@class='line']")
    assert line.text.startswith("→ ") and WRONG in line.text  # the call that caused it
    assert on_screen(why) and on_screen(cmd), "not on the first screen"
    browser.save_screenshot(str(shots / "1-first-screen.png"))
    folds = tb.find_elements(By.CSS_SELECTOR, ".traj details")
    system = next(d for d in folds if d.text.startswith("system prompt"))
    assert system.get_attribute("open") is None and "characters" in system.text
    # housekeeping (Claude Code's shell snapshot in its first turn, Codex's and
    # mini-swe-agent's probes at start-up): one closed line per place, with a count
    aside = [d for d in folds if "set aside" in d.text]
    assert aside and all(d.get_attribute("open") is None and len(d.text.splitlines()) == 1
                         for d in aside)
    size = int(re.search(r"([\d,]+) characters", system.text)[1].replace(",", ""))
    system.find_element(By.TAG_NAME, "summary").click()
    wait_for(lambda: system.find_elements(By.TAG_NAME, "pre"))
    shown = system.find_element(By.TAG_NAME, "pre").text
    assert len(shown) >= min(size, 500), (size, shown)  # whole, or a long one by its head
    assert size < 1600 or system.find_elements(By.CSS_SELECTOR, "pre button.more")  # and tail
    browser.save_screenshot(str(shots / "2-system-prompt-open.png"))


def test_the_errors_section_groups_errored_trials_by_cause(mixed_run, browser, shots):
    from selenium.webdriver.common.by import By

    browser.get(_report(mixed_run).as_uri())
    section = browser.find_element(By.ID, "errors")
    assert "3 errored trials, 2 causes" in section.find_element(By.TAG_NAME, "h2").text
    groups = section.find_elements(By.CSS_SELECTOR, "li")
    assert groups[0].text.startswith("2 trials: provider error after 5 attempts: 529 "
                                     "overloaded <html>")  # escaped: text, not markup
    assert "jq-keys" in groups[0].text and "custom script exited 1" in groups[1].text
    browser.execute_script("arguments[0].scrollIntoView()", section)
    browser.save_screenshot(str(shots / "1-errors.png"))
    link = groups[1].find_element(By.CSS_SELECTOR, "a[data-show-trial]")
    link.click()
    tb = _body(browser, link.get_attribute("data-show-trial"))
    assert "open" in tb.get_attribute("class")
    why = tb.find_element(By.CSS_SELECTOR, "tr.why")
    assert why.is_displayed() and "check 'ledger_balanced' errored" in why.text
    browser.save_screenshot(str(shots / "2-opened.png"))


def test_a_large_run_draws_details_on_open(mixed_run, browser, shots, monkeypatch):
    from selenium.webdriver.common.by import By

    import proctor.report.html as html_mod

    monkeypatch.setattr(html_mod, "INLINE_DETAILS", 10)
    browser.get(_report(mixed_run).as_uri())
    assert not browser.find_elements(By.CSS_SELECTOR, "tr.detail")
    tb = _open_trajectory(browser, FLAKY_TRIAL)
    detail = tb.find_element(By.CSS_SELECTOR, "tr.detail")
    assert "output_contains#1" in detail.text and "'feature' not in stdout" in detail.text
    other = _body(browser, "refund-order.db=mysql.r2")
    other.find_element(By.CSS_SELECTOR, "tr.trial").click()
    wait_for(lambda: "custom script exited 1" in other.text)
    assert "No trace recorded." in other.text
    browser.save_screenshot(str(shots / "1-large-run.png"))


def test_proctor_view_lists_filters_opens_and_charts(mixed_run, tmp_path, browser, shots):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from proctor.report.view import make_server
    from proctor.store import by_agent, index_run
    from tests.helpers.report import counted, write_run

    runs = []
    for day, passed in enumerate((1, 3)):
        run = write_run(tmp_path / "runs", f"day-{day}",
                        counted("t1", "openai/gpt-4.1", passed, 4, f"d{day}"))
        runs.append(run)
    suite = {"key": "0a1b2c3d4e5f", "version": "v1", "name": "x/suite.yaml"}
    for run in [*runs, mixed_run]:
        res = json.loads((run / "results.json").read_text())
        index_run(res["run_id"], run, started_at=f"2026-03-0{len(res['run_id']) % 7 + 1}T10:00",
                  status="failed", specs=["/x/suite.yaml"], summary=res["summary"],
                  suite=suite, by_agent=by_agent(res["models"]))
    server = make_server(None, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        browser.get(base + "/")
        assert "proctor runs (3 of 3, the run index)" in browser.find_element(
            By.TAG_NAME, "h1").text
        browser.save_screenshot(str(shots / "1-runs.png"))
        # errored runs apart from failed ones: the mixed run had a provider error
        Select(browser.find_element(By.NAME, "status")).select_by_value("errored")
        browser.find_element(By.CSS_SELECTOR, "form.filters button").click()
        wait_for(lambda: "status=errored" in browser.current_url)
        rows = browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr")
        assert [r.get_attribute("data-outcome") for r in rows] == ["errored"]
        browser.save_screenshot(str(shots / "2-errored.png"))
        browser.get(base + "/?q=day-1")
        assert len(browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr")) == 1

        def run_ids() -> list[str]:
            return sorted(r.find_element(By.TAG_NAME, "code").text
                          for r in browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr"))

        # by model: only the mixed run had claude-sonnet; by date: the two later days
        browser.get(base + "/")
        Select(browser.find_element(By.NAME, "model")).select_by_value(
            "anthropic/claude-sonnet-4-5")
        browser.find_element(By.CSS_SELECTOR, "form.filters button").click()
        wait_for(lambda: "model=anthropic" in browser.current_url)
        assert run_ids() == ["20260302T101500Z-ab12cd"]
        browser.get(base + "/")
        browser.execute_script("document.querySelector('input[name=since]').value='2026-03-05'")
        browser.find_element(By.CSS_SELECTOR, "form.filters button").click()
        wait_for(lambda: "since=2026-03-05" in browser.current_url)
        assert run_ids() == ["day-0", "day-1"]
        assert browser.find_element(By.NAME, "since").get_attribute("value") == "2026-03-05"
        browser.save_screenshot(str(shots / "3-since.png"))
        browser.get(base + "/")
        browser.find_element(By.LINK_TEXT, "20260302T101500Z-ab12cd").click()
        wait_for(lambda: browser.find_elements(By.ID, "trials"))
        _open_trajectory(browser, FLAKY_TRIAL)
        browser.save_screenshot(str(shots / "4-report.png"))
        browser.get(base + "/")
        browser.find_elements(By.LINK_TEXT, "x/suite.yaml")[0].click()
        svg = wait_for(lambda: browser.find_elements(By.TAG_NAME, "svg"))[0]
        assert len(svg.find_elements(By.TAG_NAME, "circle")) >= 3
        assert "llm · openai/gpt-4.1" in browser.find_element(By.CSS_SELECTOR, ".legend").text
        browser.save_screenshot(str(shots / "5-trend.png"))
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_failed_runs_report_opens_on_what_failed(real_run, browser, shots):
    """Issue 38: report.html opened on cards and charts, the failing checks below the first
    1400×1000 screen. Now the first screen has them: the task, the agent · model, the
    check, the cause and the last command the agent ran; the charts come after."""
    from selenium.webdriver.common.by import By

    alone = shots / "report.html"
    shutil.copy(real_run / "report.html", alone)
    browser.get(alone.as_uri())
    browser.save_screenshot(str(shots / "1-first-screen.png"))
    height = browser.execute_script("return window.innerHeight")

    def top(el) -> float:
        return browser.execute_script("return arguments[0].getBoundingClientRect().bottom", el)

    first = browser.find_element(By.CSS_SELECTOR, "#failing li")
    assert first.text.startswith("init-repo [none] · llm · mock/models/")
    assert "ran#0" in first.text and "no agent command matches 'git init'" in first.text
    cause = first.find_element(By.CSS_SELECTOR, ".cause")
    last = first.find_element(By.CSS_SELECTOR, "code.last")
    assert last.text == "echo nothing" and "(exit 0)" in first.text
    assert top(cause) <= height and top(last) <= height, "not on the first screen"
    charts = browser.find_element(By.CSS_SELECTOR, "section.charts")
    assert top(first) < top(charts)


@pytest.fixture
def view():
    """`proctor view` on a loopback port: start(RUNS_DIR or None) -> its base URL."""
    from proctor.report.view import make_server

    servers = []

    def start(runs_dir: Path | None = None) -> str:
        server = make_server(runs_dir, "127.0.0.1", 0)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        servers.append((server, thread))
        return f"http://127.0.0.1:{server.server_address[1]}"
    yield start
    for server, thread in servers:
        server.shutdown()
        server.server_close()
        thread.join()


def _bottom(driver, el) -> float:
    return driver.execute_script("return arguments[0].getBoundingClientRect().bottom", el)


def test_view_opens_a_trial_by_its_link_and_walks_next_and_previous(mixed_run, view, browser,
                                                                     shots):
    """Issue 38: `proctor view` had no page per trial, no deep link, no next / previous.
    A trial's link opens it alone, its trajectory drawn; next and previous (links and the
    arrow keys) walk the run's failing trials first; the bar leads back to all runs."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    base = view(mixed_run.parent)
    run_id = mixed_run.name
    browser.get(f"{base}/runs/{run_id}/trials/{FLAKY_TRIAL}/")  # the deep link, typed
    assert FLAKY_TRIAL in browser.find_element(By.TAG_NAME, "h1").text
    steps = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".traj .step"))
    assert "→ run_command: git switch -c feature" in steps[0].text
    why = browser.find_element(By.CSS_SELECTOR, "p.why")
    assert "'feature' not in stdout" in why.text and _bottom(browser, why) <= 1000
    assert browser.execute_script("return document.querySelectorAll('.traj script').length") == 0
    browser.save_screenshot(str(shots / "1-trial-page.png"))
    pos = browser.find_element(By.CSS_SELECTOR, "nav.pager .pos").text
    assert pos.startswith("trial 8 of 44 · failing first")
    nxt = browser.find_element(By.CSS_SELECTOR, "nav.pager a[rel=next]")
    target = nxt.get_attribute("href")
    nxt.click()
    wait_for(lambda: browser.current_url == target)
    assert "trial 9 of 44" in browser.find_element(By.CSS_SELECTOR, "nav.pager .pos").text
    assert "fail" in browser.find_element(By.CSS_SELECTOR, "h1 .badge").text
    browser.save_screenshot(str(shots / "2-next.png"))
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_LEFT)  # previous, by key
    wait_for(lambda: browser.current_url.endswith(f"/trials/{FLAKY_TRIAL}/"))
    # the last failing trial's next is the first errored one
    browser.get(f"{base}/runs/{run_id}/trials/refund-order.db=mysql.r1/")
    browser.find_element(By.CSS_SELECTOR, "nav.pager a[rel=next]").click()
    wait_for(lambda: "trial 17 of 44" in browser.find_element(By.CSS_SELECTOR,
                                                               "nav.pager .pos").text)
    assert browser.find_element(By.CSS_SELECTOR, "h1 .badge").text == "error"
    browser.save_screenshot(str(shots / "3-first-errored.png"))
    # back to the run, and from the run to all runs
    browser.find_element(By.LINK_TEXT, run_id).click()
    wait_for(lambda: browser.find_elements(By.ID, "trials"))
    bar = browser.find_element(By.CSS_SELECTOR, "nav.view-bar")
    assert _bottom(browser, bar) <= 100 and bar.text.startswith("all runs")
    link = _body(browser, FLAKY_TRIAL)
    _open_trajectory(browser, FLAKY_TRIAL)
    page_link = link.find_element(By.LINK_TEXT, "its own page")
    assert page_link.is_displayed()
    page_link.click()
    wait_for(lambda: browser.current_url.endswith(f"/trials/{FLAKY_TRIAL}/"))
    browser.find_element(By.LINK_TEXT, "all runs").click()
    wait_for(lambda: browser.find_elements(By.ID, "runs"))
    assert browser.find_element(By.LINK_TEXT, run_id).is_displayed()
    browser.save_screenshot(str(shots / "4-all-runs.png"))


def test_view_sets_a_claude_code_and_a_codex_trial_side_by_side(two_agents_run, view, browser,
                                                               shots):
    """One run of Claude Code and Codex on one task (both fail it): the view opens the run
    on the failing checks — the task, the agent, the failing command and its cause on the
    first 1400×1000 screen, above the charts — and a trial's page sets the other agent's
    trial beside it: both verdicts, their checks and both trajectories in two columns."""
    from selenium.webdriver.common.by import By

    base = view(two_agents_run.parent)
    run_id = json.loads((two_agents_run / "results.json").read_text())["run_id"]
    browser.get(f"{base}/")
    browser.find_element(By.LINK_TEXT, run_id).click()
    items = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#failing li"))
    browser.save_screenshot(str(shots / "1-run-first-screen.png"))
    height = browser.execute_script("return window.innerHeight")
    assert height <= 1000
    agents = set()
    for li in items:
        assert li.text.startswith("count-orders")
        agents |= {a for a in ("claude-code", "codex") if f"· {a} · " in li.text}
        assert "verify#0" in li.text and "but '4'" in li.find_element(By.CSS_SELECTOR,
                                                                      ".cause").text
        last = li.find_element(By.CSS_SELECTOR, "code.last")
        assert "wc -l" in last.text
        assert _bottom(browser, li.find_element(By.CSS_SELECTOR, ".cause")) <= height
        assert _bottom(browser, last) <= height, "the failing command is below the fold"
    assert agents == {"claude-code", "codex"}
    charts = browser.find_element(By.CSS_SELECTOR, "section.charts")
    assert _bottom(browser, items[-1]) < _bottom(browser, charts)
    # the Claude Code trial's page, and beside it the Codex trial
    claude = next(t for t in os.listdir(two_agents_run / "trials") if ".claude-code." in t)
    browser.get(f"{base}/runs/{run_id}/trials/{claude}/")
    beside = browser.find_element(By.ID, "beside")
    link = next(a for a in beside.find_elements(By.TAG_NAME, "a") if a.text.startswith("codex"))
    link.click()
    cols = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".pair > .col"))
    assert len(cols) == 2
    assert cols[0].find_element(By.TAG_NAME, "h2").text.startswith("A: claude-code · mock/")
    assert cols[1].find_element(By.TAG_NAME, "h2").text.startswith("B: codex · mock/")
    for col in cols:
        assert col.find_element(By.CSS_SELECTOR, "h2 .badge").text == "fail"
        assert "but '4'" in col.find_element(By.CSS_SELECTOR, "table.checks").text
        wait_for(lambda col=col: col.find_elements(By.CSS_SELECTOR, ".traj .step"))
        assert any("wc -l" in c.text for c in col.find_elements(By.CSS_SELECTOR, ".traj .cmd"))
    boxes = [browser.execute_script("return arguments[0].getBoundingClientRect()", c)
             for c in cols]
    assert boxes[0]["right"] <= boxes[1]["left"] and boxes[0]["top"] == boxes[1]["top"]
    verdicts = browser.find_element(By.CSS_SELECTOR, "table.verdicts").text
    assert "verify#0" in verdicts and verdicts.count("fail") >= 2
    browser.save_screenshot(str(shots / "2-side-by-side.png"))
    browser.execute_script("arguments[0].scrollIntoView()",
                           cols[0].find_element(By.CSS_SELECTOR, ".traj"))
    browser.save_screenshot(str(shots / "3-trajectories.png"))


def test_view_trend_dates_do_not_overlap(tmp_path, view, browser, shots):
    """Issue 38: the trend's dates overlapped when runs came close together. In the browser,
    no two date labels of the suite's chart or the index's chart intersect."""
    from selenium.webdriver.common.by import By

    from proctor.store import by_agent, index_run
    from tests.helpers.report import counted, write_run

    suite = {"key": "0a1b2c3d4e5f", "version": "v1", "name": "x/suite.yaml"}
    for i, minute in enumerate((0, 1, 2, 3, 30, 31, 90, 91, 92, 2000, 2001, 2002, 2003)):
        run = write_run(tmp_path / "runs", f"run-{i:02}",
                        counted("t1", "openai/gpt-4.1", i % 4, 3, f"a{i}")
                        + counted("t1", "anthropic/claude-sonnet-4-5", (i * 3) % 4, 3, f"b{i}"))
        res = json.loads((run / "results.json").read_text())
        when = datetime(2026, 3, 1, 10, tzinfo=UTC) + timedelta(minutes=minute)
        index_run(res["run_id"], run, started_at=when.isoformat(),
                  status="failed", specs=["/x/suite.yaml"], summary=res["summary"],
                  suite=suite, by_agent=by_agent(res["models"]))
    base = view()
    for name, path in (("1-suite", f"/suites/{suite['key']}"), ("2-index", "/")):
        browser.get(base + path)
        dates = browser.find_elements(By.CSS_SELECTOR, "svg.trend text.date")
        assert len(dates) >= 3
        boxes = [browser.execute_script("var b=arguments[0].getBoundingClientRect();"
                                        "return [b.left,b.right]", d) for d in dates]
        assert all(a[1] < b[0] for a, b in zip(boxes, boxes[1:], strict=False)), boxes
        assert len(browser.find_elements(By.CSS_SELECTOR, "svg.trend circle")) == 26
        browser.save_screenshot(str(shots / f"{name}.png"))
    # a run's id is never broken across lines (it is pasted into commands)
    lines = browser.execute_script(
        "return Array.prototype.map.call(document.querySelectorAll('#runs td:first-child a'),"
        "function(a){return a.getClientRects().length;})")
    assert lines and set(lines) == {1}


def test_a_reports_trial_opens_by_its_link(mixed_run, browser, shots):
    """report.html on its own (a CI artefact, no server): report.html#trial=ID opens that
    trial, scrolled to; opening a trial puts its link in the address bar."""
    from selenium.webdriver.common.by import By

    url = _report(mixed_run).as_uri()
    browser.get(f"{url}#trial={FLAKY_TRIAL}")
    tb = _body(browser, FLAKY_TRIAL)
    wait_for(lambda: tb.find_elements(By.CSS_SELECTOR, ".traj .step"))
    assert "open" in tb.get_attribute("class")
    top = browser.execute_script("return arguments[0].getBoundingClientRect().top", tb)
    assert 0 <= top < 100  # scrolled to it
    browser.save_screenshot(str(shots / "1-opened-by-link.png"))
    other = _body(browser, "refund-order.db=mysql.r1")
    other.find_element(By.CSS_SELECTOR, "tr.trial").click()
    assert browser.current_url == f"{url}#trial=refund-order.db%3Dmysql.r1"
    browser.get("about:blank")  # the copied link, opened afresh
    browser.get(f"{url}#trial=refund-order.db%3Dmysql.r1")
    wait_for(lambda: "open" in _body(browser, "refund-order.db=mysql.r1").get_attribute("class"))
    assert "open" not in _body(browser, FLAKY_TRIAL).get_attribute("class")
