"""`proctor view [RUNS_DIR]`: a small local web server over the runs on this machine.

* `/` lists the runs (from the SQLite index behind `proctor runs`; with RUNS_DIR, the runs
  under that directory, indexed or not — e.g. CI artifacts unpacked there);
* `/runs/RUN_ID/` is the run's report.html (rendered on the fly when the run has none, or when
  it is newer than its report; a run still going shows its finished trials), and
  `/runs/RUN_ID/trials/TRIAL/trace.jsonl|audit.jsonl` the files its links point to;
* `/suites/KEY` is a suite's pass rate per model over time, one inline SVG, each run linked
  to `/compare/A/B`: `proctor compare` against the run before it.

Standard library only (http.server). It binds to 127.0.0.1 unless told otherwise, answers GET
and HEAD only, serves nothing outside the run directories' reports and trial logs, refuses
requests naming another host (DNS rebinding), and its pages fetch nothing: a
Content-Security-Policy forbids it."""

from __future__ import annotations

import hashlib
import html
import json
import re
import sys
import threading
from datetime import datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from proctor.errors import UsageError
from proctor.report import data
from proctor.store import list_runs, models_of, read_json, shown

DEFAULT_PORT = 8765
PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
REPORT_CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
              "img-src data:")
LOGS = ("trace.jsonl", "audit.jsonl")
COLORS = ("#4f6bed", "#dc2626", "#16a34a", "#d97706", "#9333ea", "#0891b2", "#db2777",
          "#65a30d", "#7c3aed", "#ea580c")


def e(value: Any) -> str:
    return html.escape(data.clean(value), quote=True)


def q(run_id: Any) -> str:
    """A run id inside a link: one path segment, escaped for the URL and the attribute."""
    return html.escape(quote(str(run_id), safe=""), quote=True)


def suite_key(specs: list[str]) -> str:
    """A suite, as the runs name it: the spec paths given to `proctor run`."""
    return hashlib.sha256(json.dumps(sorted(specs)).encode()).hexdigest()[:12]


def _specs(row: dict[str, Any]) -> list[str]:
    try:
        specs = json.loads(row.get("specs") or "[]")
    except ValueError:
        return []
    return [str(s) for s in specs] if isinstance(specs, list) else []


def _by_model(row: dict[str, Any]) -> dict[str, list[int]]:
    try:
        by = json.loads(row.get("by_model") or "null")
    except ValueError:
        by = None
    if isinstance(by, dict):
        return {str(k): v for k, v in by.items() if isinstance(v, list) and len(v) == 2}
    if row.get("trials"):  # an index entry from before per-model counts: the run as a whole
        return {"(all models)": [int(row.get("passed") or 0), int(row["trials"])]}
    return {}


def _about(row: dict[str, Any]) -> str:
    """The display names of a run's benchmarks (run.json "about"), "" when none."""
    try:
        meta = read_json(Path(row["dir"]) / "run.json")
    except (UsageError, OSError, KeyError):
        return ""
    return ", ".join(a["name"] for a in data.about(meta)) if isinstance(meta, dict) else ""


def _from_disk(run_dir: Path) -> dict[str, Any] | None:
    """An index-like row for a run directory the index does not know."""
    try:
        meta = read_json(run_dir / "run.json")
    except UsageError:
        return None
    if not isinstance(meta, dict) or not meta.get("run_id"):
        return None
    row: dict[str, Any] = {"run_id": str(meta["run_id"]), "dir": str(run_dir),
                           "started_at": meta.get("started_at"), "status": "unfinished",
                           "specs": json.dumps(meta.get("paths") or []),
                           "about": ", ".join(a["name"] for a in data.about(meta))}
    if (run_dir / "results.json").is_file():
        try:
            res = read_json(run_dir / "results.json")
        except UsageError:
            return row
        s = res.get("summary") or {}
        models = res.get("models") or []
        row.update(status="interrupted" if res.get("interrupted") else
                   ("passed" if res.get("exit_code") == 0 else "failed"),
                   trials=s.get("trials"), passed=s.get("passed"), pass_rate=s.get("pass_rate"),
                   models=json.dumps([m.get("model") or f"({m.get('agent')})" for m in models]),
                   by_model=json.dumps({m.get("model") or f"({m.get('agent')})":
                                        [m.get("passed", 0), m.get("trials", 0)]
                                        for m in models}))
    return row


class Site:
    """What the server shows: the runs, found afresh on each request (runs come and go)."""

    def __init__(self, runs_dir: Path | None):
        self.runs_dir = runs_dir.resolve() if runs_dir else None
        self._cache: dict[str, tuple[float, bytes]] = {}
        self._lock = threading.Lock()

    def runs(self) -> list[dict[str, Any]]:
        rows = list_runs()
        if self.runs_dir is None:
            return rows
        rows = [r for r in rows if Path(r["dir"]).is_relative_to(self.runs_dir)]
        known = {Path(r["dir"]) for r in rows}
        candidates = [self.runs_dir, *sorted(p for p in self.runs_dir.iterdir() if p.is_dir())]
        for d in candidates:
            if d not in known and (d / "run.json").is_file() and (row := _from_disk(d)):
                rows.append(row)
        rows.sort(key=lambda r: r.get("started_at") or "", reverse=True)
        return rows

    def run(self, run_id: str) -> dict[str, Any] | None:
        return next((r for r in self.runs() if r["run_id"] == run_id), None)

    def report(self, row: dict[str, Any]) -> bytes:
        """The run's report.html: the file when it is up to date, else rendered (and kept
        in memory until the run changes)."""
        run_dir = Path(row["dir"])
        page, results = run_dir / "report.html", run_dir / "results.json"
        source = results if results.is_file() else run_dir / "results.jsonl"
        changed = source.stat().st_mtime if source.exists() else 0.0
        if page.is_file() and page.stat().st_mtime >= changed:
            return page.read_bytes()
        with self._lock:
            hit = self._cache.get(row["run_id"])
            if hit and hit[0] == changed:
                return hit[1]
        from proctor.report.html import render_html

        run = data.load_run(run_dir, allow_partial=True)
        body = render_html(run.results, run.config, run_dir).encode()
        with self._lock:
            self._cache[row["run_id"]] = (changed, body)
        return body


# ---- pages ----------------------------------------------------------------------------------

CSS = """
:root{--bg:#fff;--fg:#1d2330;--muted:#6b7280;--line:#e5e7eb;--panel:#f8fafc;--accent:#4f6bed}
@media (prefers-color-scheme:dark){:root{--bg:#0f1420;--fg:#e5e7eb;--muted:#9ca3af;
--line:#273043;--panel:#151c2c;--accent:#7c93ff}}
body{margin:0 auto;max-width:1200px;padding:24px;background:var(--bg);color:var(--fg);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
h1{font-size:22px;margin:0 0 12px}a{color:var(--accent)}.muted{color:var(--muted)}
table{border-collapse:collapse;width:100%}th,td{padding:6px 8px;text-align:left;
border-bottom:1px solid var(--line);vertical-align:top}th{white-space:nowrap}
.n{text-align:right;font-variant-numeric:tabular-nums}code{font:12px ui-monospace,Menlo,monospace}
.passed{color:#16a34a}.failed{color:#dc2626}.interrupted,.running,.unfinished{color:#d97706}
svg{width:100%;height:auto;background:var(--panel);border:1px solid var(--line);border-radius:10px}
svg text{fill:var(--fg);font-size:11px}svg .axis{fill:var(--muted)}svg .grid{stroke:var(--line)}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;
height:12px;border-radius:3px;margin-right:5px;vertical-align:-1px}
"""


def _page(title: str, body: str) -> bytes:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{e(title)}</title><style>{CSS}</style></head><body>{body}"
            "</body></html>\n").encode()


def _rate(row: dict[str, Any]) -> str:
    if row.get("trials") is None:
        return ""
    rate = row.get("pass_rate")
    return f"{row.get('passed') or 0}/{row['trials']}" + ("" if rate is None else f" {rate:.0%}")


def index_page(site: Site) -> bytes:
    rows = site.runs()
    where = shown(site.runs_dir) if site.runs_dir else "the run index"
    if not rows:
        return _page("proctor runs", f"<h1>proctor runs</h1><p class=muted>No runs in "
                                     f"{e(where)} yet.</p>")
    out = [f"<h1>proctor runs <span class=muted>({len(rows)}, {e(where)})</span></h1>"
           "<table><thead><tr><th>run</th><th>started</th><th>status</th>"
           '<th class="n">passed</th><th>models</th><th>suite</th><th>directory</th>'
           "</tr></thead><tbody>"]
    for r in rows:
        specs = _specs(r)
        names = r.get("about") or _about(r) or ", ".join(Path(s).name or s for s in specs) or "–"
        gone = not Path(r["dir"]).is_dir()
        status = (r.get("status") or "") + (" (deleted)" if gone else "")
        run_link = (e(r["run_id"]) if gone else
                    f'<a href="/runs/{q(r["run_id"])}/">{e(r["run_id"])}</a>')
        out.append(
            f"<tr><td><code>{run_link}</code></td>"
            f"<td>{e((r.get('started_at') or '').replace('T', ' ')[:19])}</td>"
            f'<td class="{e(r.get("status") or "")}">{e(status)}</td>'
            f'<td class="n">{e(_rate(r))}</td><td>{e(", ".join(models_of(r)) or "–")}</td>'
            f'<td><a href="/suites/{suite_key(specs)}">{e(names)}</a></td>'
            f'<td><code class="muted">{e(shown(r["dir"]))}</code></td></tr>')
    out.append("</tbody></table><p class=muted>A suite's link shows its pass rate per model "
               "over time.</p>")
    return _page("proctor runs", "".join(out))


def _when(row: dict[str, Any]) -> datetime | None:
    try:
        return datetime.fromisoformat(str(row.get("started_at")))
    except ValueError:
        return None


def trend_svg(runs: list[dict[str, Any]]) -> str:
    """Pass rate per model over time: one line per model, a point per run (a link to its
    report, with the figures in its tooltip)."""
    points = [(w, r) for r in runs if (w := _when(r)) is not None]
    points.sort(key=lambda p: p[0])
    models = list(dict.fromkeys(m for _, r in points for m in _by_model(r)))
    left, right, top, plot_w, plot_h = 46, 20, 16, 740, 240
    width, height = left + plot_w + right, top + plot_h + 40
    t0 = points[0][0].timestamp() if points else 0.0
    span = (points[-1][0].timestamp() - t0) if points else 0.0

    def x(when: datetime) -> float:
        return left + (plot_w / 2 if span <= 0 else plot_w * (when.timestamp() - t0) / span)

    def y(rate: float) -> float:
        return top + plot_h * (1 - rate)

    out = [f'<svg viewBox="0 0 {width} {height}" role="img" '
           'aria-label="pass rate per model over time">']
    for p in (0, 25, 50, 75, 100):
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(p / 100):.1f}" '
                   f'y2="{y(p / 100):.1f}" class="grid"/><text x="{left - 6}" '
                   f'y="{y(p / 100) + 4:.1f}" text-anchor="end" class="axis">{p}%</text>')
    for i, (when, _) in enumerate(points):
        if i in (0, len(points) - 1) or len(points) <= 6:
            # the first and last labels stay inside the chart
            anchor = ("middle" if span <= 0 or 0 < i < len(points) - 1 else
                      "start" if i == 0 else "end")
            out.append(f'<text x="{x(when):.1f}" y="{top + plot_h + 18}" '
                       f'text-anchor="{anchor}" class="axis">'
                       f'{e(when.strftime("%m-%d %H:%M"))}</text>')
    for n, model in enumerate(models):
        color = COLORS[n % len(COLORS)]
        series = [(when, r, _by_model(r)[model]) for when, r in points if model in _by_model(r)]
        coords = [(x(when), y(p / t if t else 0.0)) for when, _, (p, t) in series]
        if len(coords) > 1:
            path = " ".join(f"{cx:.1f},{cy:.1f}" for cx, cy in coords)
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" '
                       'stroke-width="2"/>')
        for (cx, cy), (when, r, (p, t)) in zip(coords, series, strict=True):
            out.append(f'<a href="/runs/{q(r["run_id"])}/"><circle cx="{cx:.1f}" cy="{cy:.1f}" '
                       f'r="4" fill="{color}"><title>{e(model)}: {p}/{t} '
                       f'({data.pct(p / t if t else 0.0)}) · run {e(r["run_id"])} · '
                       f'{e(when.isoformat(timespec="minutes"))}</title></circle></a>')
    out.append("</svg>")
    legend = "".join(f'<span><i style="background:{COLORS[n % len(COLORS)]}"></i>{e(m)}</span>'
                     for n, m in enumerate(models))
    return "".join(out) + f'<p class="legend">{legend}</p>'


def suite_page(site: Site, key: str) -> bytes | None:
    runs = [r for r in site.runs() if suite_key(_specs(r)) == key]
    if not runs:
        return None
    names = ", ".join(Path(s).name or s for s in _specs(runs[0])) or "(no specs)"
    models = list(dict.fromkeys(m for r in reversed(runs) for m in _by_model(r)))
    head = "".join(f'<th class="n">{e(m)}</th>' for m in models)
    rows = []
    for i, r in enumerate(runs):  # newest first: each against the run before it
        by = _by_model(r)
        cells = "".join(
            f'<td class="n">{by[m][0]}/{by[m][1]} {data.pct(by[m][0] / by[m][1] if by[m][1] else 0)}'
            "</td>" if m in by else '<td class="n muted">–</td>' for m in models)
        vs = (f'<a href="/compare/{q(runs[i + 1]["run_id"])}/{q(r["run_id"])}">vs previous</a>'
              if i + 1 < len(runs) else "")
        rows.append(f'<tr><td><code><a href="/runs/{q(r["run_id"])}/">{e(r["run_id"])}</a>'
                    f"</code></td><td>{e(r.get('status'))}</td>{cells}<td>{vs}</td></tr>")
    body = (f'<p><a href="/">all runs</a></p><h1>{e(names)} <span class="muted">pass rate per '
            f"model over time ({len(runs)} runs)</span></h1>"
            f'<p class="muted">{e(", ".join(_specs(runs[0])))}</p>{trend_svg(runs)}'
            f"<table><thead><tr><th>run</th><th>status</th>{head}<th></th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")
    return _page(f"proctor: {names}", body)


def compare_page(site: Site, run_a: str, run_b: str) -> bytes | None:
    """`proctor compare A B` as a page: did pass rates change beyond chance?"""
    from proctor.compare import compare_runs

    rows = [site.run(run_a), site.run(run_b)]
    if any(r is None or not (Path(r["dir"]) / "results.json").is_file() for r in rows):
        return None
    a, b = (data.load_run(r["dir"]) for r in rows if r is not None)
    res = compare_runs(a.results, b.results)
    mark = {"regression": '<b class="failed">REGRESSION</b>',
            "improvement": '<b class="passed">improved</b>'}
    out = [f'<p><a href="/">all runs</a></p><h1>compare <a href="/runs/{q(run_a)}/">{e(run_a)}'
           f'</a> → <a href="/runs/{q(run_b)}/">{e(run_b)}</a></h1>'
           f"<p>{len(res.regressions)} significant regression(s), {len(res.improvements)} "
           f"improvement(s) <span class=muted>(Fisher's exact test, two-sided, Holm-adjusted, "
           f"alpha {res.alpha:g}; docs/reports.md)</span></p>"]
    for title, comparisons in (("Models", res.models), ("Tasks", res.tasks)):
        if not comparisons:
            continue
        out.append(f"<h2>{title}</h2><table><thead><tr><th></th><th class=n>A</th>"
                   "<th class=n>B</th><th class=n>difference (95% CI)</th>"
                   "<th class=n>p (Holm)</th><th></th></tr></thead><tbody>")
        for c in comparisons:
            lo, hi = c.diff_ci
            label = f"{c.task_label} · {c.label}" if c.task_id else c.label
            out.append(f"<tr><td>{e(label)}</td><td class=n>{c.passed_a}/{c.n_a}</td>"
                       f"<td class=n>{c.passed_b}/{c.n_b}</td><td class=n>{data.points(c.diff)} "
                       f"pts ({data.points(lo)} to {data.points(hi)})</td>"
                       f"<td class=n>{c.p_adj:.3f}</td><td>{mark.get(c.flag, '')}</td></tr>")
        out.append("</tbody></table>")
    for label, names in (("Only in A", res.only_a), ("Only in B", res.only_b)):
        if names:
            out.append(f"<p class=muted>{label}: {e(', '.join(names))}</p>")
    return _page(f"compare {run_a} → {run_b}", "".join(out))


# ---- the server -----------------------------------------------------------------------------

_RUN_PATH = re.compile(r"^/runs/([^/]+)/(?:trials/([^/]+)/([^/]+))?$")


class Handler(BaseHTTPRequestHandler):
    server_version = "proctor-view"
    site: Site
    hosts: set[str] | None  # names a request may use in its Host header; None: any

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        pass  # quiet: one line at start says where to look

    def _send(self, status: int, body: bytes, kind: str = "text/html; charset=utf-8",
              csp: str = PAGE_CSP) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", csp)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: HTTPStatus, text: str) -> None:
        self._send(status, _page(f"{status.value}", f'<p><a href="/">all runs</a></p>'
                                                    f"<h1>{status.value}</h1><p>{e(text)}</p>"))

    def do_HEAD(self) -> None:  # noqa: N802 (http.server's naming)
        self.do_GET()

    def do_GET(self) -> None:  # noqa: N802
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]").lower()
        if self.hosts is not None and host not in self.hosts:
            self._error(HTTPStatus.MISDIRECTED_REQUEST, "this server answers for "
                        "localhost only")
            return
        path = unquote(urlsplit(self.path).path)
        try:
            self._route(path)
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as err:  # a broken run directory must not take the server down
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(err).__name__}: {err}")

    def _route(self, path: str) -> None:
        if path == "/favicon.ico":  # browsers ask; a 404 would be a console error
            self.send_response(HTTPStatus.NO_CONTENT)
            self.end_headers()
            return
        if path in ("/", "/index.html"):
            self._send(HTTPStatus.OK, index_page(self.site))
            return
        if path.startswith("/suites/"):
            page = suite_page(self.site, path[len("/suites/"):])
            if page is None:
                self._error(HTTPStatus.NOT_FOUND, "no runs of that suite")
            else:
                self._send(HTTPStatus.OK, page)
            return
        if path.startswith("/compare/") and path.count("/") == 3:
            _, _, a, b = path.split("/")
            page = compare_page(self.site, a, b)
            if page is None:
                self._error(HTTPStatus.NOT_FOUND, "compare needs two finished runs")
            else:
                self._send(HTTPStatus.OK, page)
            return
        if path.startswith("/runs/") and path.count("/") == 2:
            self.send_response(HTTPStatus.MOVED_PERMANENTLY)  # relative links need the slash
            self.send_header("Location", path + "/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        m = _RUN_PATH.match(path)
        row = self.site.run(m.group(1)) if m else None
        if m is None or row is None or not Path(row["dir"]).is_dir():
            self._error(HTTPStatus.NOT_FOUND, f"nothing at {path}")
            return
        if m.group(2) is None:
            self._send(HTTPStatus.OK, self.site.report(row), csp=REPORT_CSP)
            return
        trial, name = m.group(2), m.group(3)
        trials = (Path(row["dir"]) / "trials").resolve()
        file = (trials / trial / name).resolve()
        if name not in LOGS or file.parent.parent != trials or not file.is_file():
            self._error(HTTPStatus.NOT_FOUND, f"nothing at {path}")
            return
        # Agent output: served as plain text, never as something a browser would run.
        self._send(HTTPStatus.OK, file.read_bytes(), "text/plain; charset=utf-8")


def make_server(runs_dir: Path | None, host: str = "127.0.0.1",
                port: int = DEFAULT_PORT) -> ThreadingHTTPServer:
    site = Site(runs_dir)
    everywhere = host in ("0.0.0.0", "::", "")
    hosts = None if everywhere else {host.strip("[]").lower(), "localhost", "127.0.0.1", "::1"}
    handler = type("ViewHandler", (Handler,), {"site": site, "hosts": hosts})
    try:
        server = ThreadingHTTPServer((host, port), handler)
    except OSError as err:
        raise UsageError(f"cannot listen on {host}:{port}: {err.strerror or err} "
                         "(choose another with --port)") from None
    server.daemon_threads = True
    return server


def view_main(runs_dir: str | None, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> int:
    """Serve until Ctrl-C."""
    where = Path(runs_dir) if runs_dir else None
    if where is not None and not where.is_dir():
        raise UsageError(f"{runs_dir} is not a directory")
    server = make_server(where, host, port)
    shown_host = f"[{host}]" if ":" in host else host
    print(f"proctor view: http://{shown_host}:{server.server_address[1]}/  (Ctrl-C to stop)",
          flush=True)
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(f"proctor: warning: listening on {host}: anyone who can reach this machine can "
              "read these runs", file=sys.stderr)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
