"""report.html: parsed with html.parser for structure, self-containment and escaping."""

from __future__ import annotations

import json
from html.parser import HTMLParser

from proctor.report import write_reports
from proctor.report.html import JS, render_html


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
    assert len(page.find("svg")) == 3  # pass rate by model, scores, durations
    assert len(page.find("table", id="trials")) == 1
    bodies = [a for t, a in page.elements if t == "tbody" and "data-id" in a]
    assert len(bodies) == 44
    statuses = [a["data-status"] for a in bodies]
    assert statuses.count("pass") == 25 and statuses.count("error") == 3
    sortable = [a["data-key"] for a in page.find("th") if "data-key" in a]
    assert sortable == ["id", "task", "model", "status", "score", "turns", "tokens", "cost",
                        "duration"]
    assert len(page.find("input", id="q")) == 1
    assert {a["value"] for a in page.find("option")} >= {"", "pass", "fail", "error",
                                                         "openai/gpt-4.1", "(command)"}
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
    assert page.scripts == [JS]  # our one inline script, nothing else
    assert not page.find("link")
    assert all("src" not in a for _, a in page.elements)
    links = [a["href"] for a in page.find("a")]
    assert links and all(h.startswith("trials/") for h in links)  # files of the run only
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
