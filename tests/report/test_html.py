"""report.html: parsed with html.parser for structure, self-containment and escaping."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

from proctor.report import trajectory_assets, write_reports
from proctor.report.html import JS, render_html
from proctor.report.trajectory import LEVELS, Trajectory, decode, digest, embedded, recorded
from tests.helpers.report import FLAKY_TRIAL


class Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in_script = False
        self._stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if tag == "script":
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)

    def find(self, tag, **attrs):
        return [a for t, a in self.elements if t == tag
                and all(a.get(k) == v for k, v in attrs.items())]


def _page(run_dir) -> tuple[str, Page]:
    results = json.loads((run_dir / "results.json").read_text())
    (path,) = write_reports(run_dir, results, ["html"])
    html = path.read_text()
    page = Page()
    page.feed(html)
    page.close()
    return html, page


def test_structure(mixed_run):
    html, page = _page(mixed_run)
    assert html.startswith("<!DOCTYPE html>")
    assert "specs examples/git-suite.yaml, examples/refund.yaml" in html  # run.json `paths`
    # pass rate by model, scores, durations; a help-mode effect per model
    assert len(page.find("svg")) == 3 + 2
    assert len(page.find("table", id="trials")) == 1
    # model names wrap after a `/` before they would break mid-word
    assert "<td>llm · anthropic/<wbr>claude-sonnet-4-5</td>" in html
    bodies = [a for t, a in page.elements if t == "tbody" and "data-id" in a]
    assert len(bodies) == 44
    statuses = [a["data-status"] for a in bodies]
    assert statuses.count("pass") == 25 and statuses.count("error") == 3
    sortable = [a["data-key"] for a in page.find("th") if "data-key" in a]
    assert sortable == ["id", "task", "model", "help", "params", "status", "score", "turns",
                        "tokens", "cost", "duration"]
    assert len(page.find("input", id="q")) == 1
    assert {a["value"] for a in page.find("option")} >= {"", "pass", "fail", "error",
                                                         "llm · openai/gpt-4.1", "command"}
    heat = [a for a in page.find("td") if a.get("class") == "cell"]
    assert len(heat) == 16  # one cell per tasks row: task × model × help mode × params
    text = " ".join(page.text)
    assert "Threshold missed" in text and "anthropic/claude-sonnet-4-5" in text
    assert "refunds.count = 1" in text  # check details are in the page
    assert "flaky" in text
    # pass@k / pass^k in the heat map (per tasks row) and the models table; total cost too
    assert "k=3: 100% / 0%" in text and "k=3: 67% / 67%" in text
    assert "$ total" in text and f"${18 * 0.0021:.4f}" in text


def test_self_contained(mixed_run):
    html, page = _page(mixed_run)
    # the trajectories (data: a JSON array of base64 strings) and our one inline script
    assert len(page.scripts) == 2 and page.scripts[1] == trajectory_assets.JS + JS
    assert page.find("script", type="application/json", id="trajectories")
    assert all(b is None or re.fullmatch(r"[A-Za-z0-9+/=]+", b)
               for b in json.loads(page.scripts[0]))
    assert not page.find("link")
    assert all("src" not in a for _, a in page.elements)
    links = [a["href"] for a in page.find("a")]
    # files of the run, or this page (the failing-checks list opens a trial below)
    assert links and all(h.startswith(("trials/", "#")) for h in links)
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html
    (csp,) = [a for a in page.find("meta") if a.get("http-equiv") == "Content-Security-Policy"]
    assert csp["content"].startswith("default-src 'none'")


def test_untrusted_output_is_escaped(mixed_run):
    html, page = _page(mixed_run)
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in html
    assert "<b>bold</b>" not in html and "<unsafe>" not in html
    assert "\x1b" not in html and "\x00" not in html
    # the hostile text shows up as text to a browser
    assert any('<script>alert("pwned")</script>' in t for t in page.text)
    assert any("[REDACTED:API_KEY]" in t for t in page.text)


def test_attribute_injection_is_escaped():
    t = {"id": 'x"><img src=x onerror=alert(1)>', "task_id": "t' onmouseover='x", "model": None,
         "status": "fail", "composite_score": 0.0, "agent": "command", "duration_s": 1.0,
         "checks": [{"name": "<c>", "type": "ran", "passed": False, "score": 0, "weight": 1,
                     "gate": False, "message": "</pre><script>x()</script>"}],
         "output": "</textarea></pre><svg onload=alert(1)>"}
    html = render_html({"run_id": "<r>", "trials": [t], "tasks": [], "models": []})
    page = Page()
    page.feed(html)
    assert not page.find("img") and len(page.find("svg")) == 3
    assert len(page.scripts) == 1
    assert all(not k.startswith("on") for _, a in page.elements for k in a)


def test_empty_run_renders():
    html = render_html({"run_id": "empty", "trials": [], "tasks": [], "models": []})
    page = Page()
    page.feed(html)
    assert len(page.find("table", id="trials")) == 1


def _docs(page) -> list:
    """Each trial's embedded trajectory document (None for a trial without one)."""
    return [None if b is None else decode(b)
            for b in json.loads(page.scripts[_script_index(page, "trajectories")])]


def _script_index(page, name) -> int:
    scripts = [a for t, a in page.elements if t == "script"]
    return next(i for i, a in enumerate(scripts) if a.get("id") == name)


def test_trajectory_is_embedded_compressed_and_complete(mixed_run):
    html, page = _page(mixed_run)
    docs = _docs(page)
    assert len(docs) == 44
    bodies = [a for t, a in page.elements if t == "tbody" and "data-id" in a]
    by_id = {a["data-id"]: docs[int(a["data-i"])] for a in bodies}
    assert sum(d is not None for d in docs) == 1  # only that trial has a trace in the fixture
    doc = by_id[FLAKY_TRIAL]
    assert [s["k"] for s in doc["items"]] == ["turn", "cmd", "output"]
    turn = doc["items"][0]
    assert turn["text"] == "I'll create the branch." and turn["in"] == 1200
    # the call and the command it caused, together; the next command answers no call
    (call,) = turn["calls"]
    assert call["line"] == "run_command: git switch -c feature"
    (cmd,) = call["cmds"]
    assert cmd["cmd"] == "git switch -c feature" and cmd["exit"] == 0
    assert cmd["stderr"] == "Switched to a new branch 'feature'\n"
    other = doc["items"][1]
    assert other["cmd"] == "git branch" and other["exit"] == 1 and other["dur"] == 0.01
    assert "line 39" in other["stdout"] and "\x1b" not in other["stdout"]
    assert [a[0] for a in doc["audit"]] == ["command", "file_write", "db_write", "http_call"]
    assert doc["audit"][3][1] == "mail POST /send → 200"
    # trials without a trace say so instead of a spinner
    assert html.count('<p class="muted">No trace recorded.</p>') == 43
    # the trial's digest was written next to its trace: the next report only reads it
    assert (mixed_run / "trials" / FLAKY_TRIAL / "digest.bin").is_file()


def test_trajectory_fits_its_share_and_says_what_was_cut():
    trace = [{"type": "command", "command": f"step {i}", "exit_code": 0, "duration_s": 0.1,
              "stdout": f"{i}:" + "y" * 50_000, "stderr": ""} for i in range(200)]
    audit = [{"type": "file_write", "details": {"path": f"node_modules/{i}", "size": 1}}
             for i in range(3000)]
    traj = Trajectory(trace, audit)
    docs = [traj.at(*level) for level in LEVELS]
    sizes = [len(json.dumps(d, separators=(",", ":"))) for d in docs]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] < 6000
    small = docs[-2]
    head, gone = small["items_cut"]
    assert len(small["items"]) + gone == 200 and small["items"][0]["cmd"] == "step 0"
    assert small["items"][-1]["cmd"] == "step 199"  # the start and the end are kept
    assert "characters" in small["items"][0]["stdout"]  # the cut says so
    assert small["limit"] < 8000 and small["audit_more"]["file_write"] > 2900
    # the largest level keeps every step
    assert docs[0]["limit"] == 8000 and "items_cut" not in docs[0]


def test_a_page_of_many_trials_stays_within_its_budget(tmp_path):
    trials = [{"id": f"t{i}", "status": "pass" if i % 2 else "fail"} for i in range(120)]
    for i, t in enumerate(trials):
        d = tmp_path / "trials" / t["id"]
        d.mkdir(parents=True)
        (d / "trace.jsonl").write_text("".join(json.dumps(
            {"type": "command", "command": f"make {i}", "exit_code": i % 2, "duration_s": 1,
             "stdout": "".join(f"{i}-{j} {'ab' * (j % 7)} line\n" for j in range(400))}) + "\n"
            for _ in range(5)))
    dirs = recorded(trials, tmp_path)
    out = embedded(trials, dirs, 60_000)
    assert len(out) == 120 and sum(len(b) for b in out) <= 60_000
    docs = [decode(b) for b in out]
    assert [d["items"][0]["cmd"] for d in docs] == [f"make {i}" for i in range(120)]
    # failures got more room than passes
    assert docs[0]["limit"] >= docs[1]["limit"]
    # the same page again reads each trial's digest, made once
    stamp = (tmp_path / "trials" / "t0" / "digest.bin").stat().st_mtime_ns
    assert embedded(trials, dirs, 60_000) == out
    assert (tmp_path / "trials" / "t0" / "digest.bin").stat().st_mtime_ns == stamp


def test_a_digest_is_made_again_when_its_trace_changed(tmp_path):
    d = tmp_path / "trials" / "t"
    d.mkdir(parents=True)
    trace = d / "trace.jsonl"
    trace.write_text(json.dumps({"type": "command", "command": "first", "exit_code": 0}) + "\n")
    digest(d)
    with trace.open("a") as f:  # a resumed trial appends to its trace
        f.write(json.dumps({"type": "command", "command": "second", "exit_code": 1}) + "\n")
    (blob,) = embedded([{"id": "t", "status": "fail"}], recorded([{"id": "t"}], tmp_path),
                       1_000_000)
    assert [i["cmd"] for i in decode(blob)["items"]] == ["first", "second"]
    # a digest that is not one (a run directory from elsewhere) is made again, not trusted
    (d / "digest.bin").write_bytes(b"PRDG" + b"\xff" * 40)
    (blob,) = embedded([{"id": "t", "status": "fail"}], recorded([{"id": "t"}], tmp_path),
                       1_000_000)
    assert [i["cmd"] for i in decode(blob)["items"]] == ["first", "second"]


def test_failing_checks_triage_and_heat_map_cells_filter(mixed_run):
    html, page = _page(mixed_run)
    text = "".join(page.text)
    assert "Failing checks (15 in " in text
    for mode in ("injected", "none"):  # grouped per identical conditions
        assert f"git-branch [{mode}] · llm · anthropic/claude-sonnet-4-5 · output_contains#1 " \
               "(output_contains) failed in 1 of 3 trials: 'feature' not in stdout" in text
    items = [a for a in page.find("a") if "data-show-trial" in a]
    assert items and all(a["href"] == "#" for a in items)
    # every heat-map cell's key is carried by its trials, and only by them
    cells = {a["data-cell"] for a in page.find("td") if a.get("class") == "cell"}
    bodies = [a for t, a in page.elements if t == "tbody" and "data-id" in a]
    assert {a["data-cell"] for a in bodies} == cells and len(cells) == 16
    flaky = next(a for a in bodies if a["data-id"] == FLAKY_TRIAL)
    same = [a["data-id"] for a in bodies if a["data-cell"] == flaky["data-cell"]]
    assert len(same) == 3 and all(".injected." in i and "anthropic" in i for i in same)


def test_long_model_names_stay_distinct():
    from proctor.report.labels import short_labels

    a, b = "anthropic/claude-sonnet-4-5", "anthropic/claude-sonnet-4-5-20250929"
    names = short_labels([a, b, "openai/gpt-4.1"], 22)
    assert len(set(names.values())) == 3 and all(len(v) <= 22 for v in names.values())
    assert names[b].endswith("20250929") and names["openai/gpt-4.1"] == "openai/gpt-4.1"
    trials = [{"id": f"t.{m}", "task_id": "t", "model": m, "status": "pass", "agent": "llm"}
              for m in (a, b)]
    from proctor.results import trial_from_line
    from proctor.scoring import summarize

    scored = summarize([trial_from_line(t) for t in trials], [])
    page = Page()
    page.feed(render_html({"run_id": "r", "trials": trials, **scored}))
    heads = [a.get("title") for a in page.find("th") if a.get("class") == "model"]
    assert heads == [f"llm · {a}", f"llm · {b}"]  # whole names in the heat map header (wrapped by CSS)


def test_a_large_run_carries_details_compressed(mixed_run, monkeypatch):
    import proctor.report.html as html_mod

    monkeypatch.setattr(html_mod, "INLINE_DETAILS", 10)  # this run's 44 trials are "large"
    html, page = _page(mixed_run)
    assert not page.find("tr", **{"class": "detail"})  # a small DOM: details come on open
    (script,) = page.find("script", id="details")
    blocks = json.loads(page.scripts[_script_index(page, "details")])
    details = [d for b in blocks for d in decode(b)]
    assert int(script["data-chunk"]) == 50 and len(details) == 44
    bodies = [a for t, a in page.elements if t == "tbody" and "data-id" in a]
    i = int(next(a for a in bodies if a["data-id"] == FLAKY_TRIAL)["data-i"])
    assert '<div class="traj">' in details[i] and _docs(page)[i]["items"]
    # the detail is the same escaped markup as inline: hostile output stays text
    everything = "".join(details)
    assert "refunds.count = 1" in everything and "<script>alert" not in everything
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in everything


def test_the_page_is_written_in_pieces_as_rendered_without_holding_files_open(mixed_run,
                                                                                monkeypatch):
    """report.html is written piece by piece (a large page is never one string, nor one
    encoded copy: issue 37's memory and CPU), byte for byte the page `render_html` gives;
    each trial's digest is opened once and closed."""
    import os
    from pathlib import Path

    import proctor.report.html as html_mod

    monkeypatch.setattr(html_mod, "INLINE_DETAILS", 10)  # the large-run layout as well
    results = json.loads((mixed_run / "results.json").read_text())
    run = json.loads((mixed_run / "run.json").read_text())
    pieces = html_mod.render_html_pieces(results, run, Path(mixed_run))
    # a piece per trial row and per trajectory at least: none is the page
    assert len(pieces) > 2 * len(results["trials"])
    page = render_html(results, run, Path(mixed_run))
    assert "".join(pieces) == page and max(map(len, pieces)) < len(page) / 2
    fds = len(os.listdir("/proc/self/fd"))
    (path,) = write_reports(mixed_run, results, ["html"])
    assert path.read_bytes() == page.encode()
    assert len(os.listdir("/proc/self/fd")) == fds  # every digest.bin closed again


def test_histogram_axes_neither_repeat_nor_split_trials():
    import re

    from proctor.report.charts import chart_durations, chart_scores

    def axes(durations):
        svg = chart_durations([{"duration_s": d} for d in durations])
        return (re.findall(r'text-anchor="middle">([^<]*)<', svg),
                re.findall(r'text-anchor="end">([^<]*)<', svg))

    labels, ticks = axes([0.01, 0.02, 0.2, 0.24] + [0.01] * 438)
    # where bins meet, with the decimals the step needs (not 0s 0s 0.1s)
    assert labels == ["0s", "0.05s", "0.1s", "0.15s", "0.2s", "0.25s"]
    assert ticks == ["0", "220", "440"]  # whole trials: no 219.5
    labels, _ = axes([100, 3000])
    assert labels[:2] == ["0s", "16m40s"] and len(set(labels)) == len(labels)
    # scores: 0 to 1, the last bin (where passing trials are) ends at a label too
    svg = chart_scores([{"composite_score": 1.0}] * 5 + [{"composite_score": 0.0}])
    assert re.findall(r'text-anchor="middle">([^<]*)<', svg) == ["0", "0.2", "0.4", "0.6",
                                                                 "0.8", "1"]
    assert "<title>0.9–1: 5 trials</title>" in svg


def test_a_trial_id_cannot_point_outside_its_run(tmp_path):
    from proctor.report.trajectory import recorded

    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "trace.jsonl").write_text('{"type": "command", "command": "cat key"}\n')
    run = tmp_path / "run"
    (run / "trials" / "ok").mkdir(parents=True)
    (run / "trials" / "ok" / "trace.jsonl").write_text('{"type": "agent_output"}\n')
    dirs = recorded([{"id": "../../secret"}, {"id": ".."}, {"id": "ok"}], run)
    assert [d and d.dir for d in dirs] == [None, None, str(run / "trials" / "ok")]


def test_help_mode_effects_table(mixed_run):
    html, page = _page(mixed_run)
    start = html.index('<table class="grid-table" id="help-modes">')
    table = html[start:html.index("</table>", start)]
    rows = re.findall(r"<tr>(.*?)</tr>", table)[1:]
    cells = [re.sub(r"<svg.*?</svg>", "SVG", r) for r in rows]
    assert cells[0] == ('<td>llm · openai/gpt-4.1</td><td>injected</td><td class="n">6/9 (67%)</td>'
                        '<td>none</td><td class="n">6/9 (67%)</td><td class="n">0</td>'
                        '<td class="n">-38 to +38</td><td>SVG</td><td class="n">1.000</td>')
    assert len(rows) == 2 and 'class="effect "' in rows[0]  # an interval crossing 0: grey
    text = "".join(page.text)
    assert "Help modes (does --help help?)" in text and "minus the baseline's" in text


def test_effect_drawing_colours_a_clear_difference():
    from proctor.report.html import _effect_svg

    assert 'class="effect down"' in _effect_svg(-0.5, -0.76, -0.12)
    assert 'class="effect up"' in _effect_svg(0.5, 0.12, 0.76)
    assert '<circle cx="42" ' in _effect_svg(-0.5, -0.76, -0.12)  # 80 - 76 * 0.5


def test_a_heat_map_of_many_tasks_shows_those_needing_a_look():
    from proctor.report import html as html_mod
    from proctor.results import trial_from_line
    from proctor.scoring import summarize

    trials = [{"id": f"t{i:04d}.r0", "task_id": f"t{i:04d}", "model": "m/x", "replica": 0,
               "params": {}, "status": "fail" if i >= 595 else "pass",
               "composite_score": 0.0 if i >= 595 else 1.0} for i in range(600)]
    scored = summarize([trial_from_line(t) for t in trials], [])
    out = html_mod.heat_map({"trials": trials, **scored})
    rows = re.findall(r'<tr><th scope="row">([^<]+)</th>', out)
    assert len(rows) == html_mod.MAX_HEAT_TASKS and rows[:5] == [f"t{i:04d}" for i in
                                                                  range(595, 600)]
    assert "… and 100 more tasks" in out
