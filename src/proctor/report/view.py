"""`proctor view [RUNS_DIR]`: a small local web server over the runs on this machine.

* `/` lists the runs (from the SQLite index behind `proctor runs`; with RUNS_DIR, the runs
  under that directory, indexed or not — e.g. CI artifacts unpacked there), searched and
  filtered by suite, agent, model, outcome (errored apart from failed) and date, under a
  chart of their pass rate over time per suite × agent × model;
* `/runs/RUN_ID/` is the run's report.html (rendered on the fly when the run has none, or when
  it is newer than its report; a run still going shows its finished trials) under a bar
  leading back to all runs, its suite and its trials one by one, and
  `/runs/RUN_ID/trials/TRIAL/trace.jsonl|audit.jsonl` the files its links point to;
* `/runs/RUN_ID/trials/TRIAL/` is one trial on its own page, with previous / next (failing
  first), and `/runs/RUN_ID/trials/TRIAL/vs/RUN_ID2/TRIAL2` two trials side by side
  (view_trials.py);
* `/suites/KEY` is a suite (its spec files, resolved: view_runs.py) over time: each agent's
  pass rate on its model, one line each, broken where the suite changed; each run linked
  to `/compare/A/B`: `proctor compare` against the run before it. `proctor check`'s
  scratch runs are never part of one.

Standard library only (http.server). It binds to 127.0.0.1 unless told otherwise, answers GET
and HEAD only, serves nothing outside the run directories' reports and trial logs, refuses
requests naming another host (DNS rebinding), and its pages fetch nothing: a
Content-Security-Policy forbids it."""

from __future__ import annotations

import re
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

from proctor.errors import UsageError
from proctor.report import data
from proctor.report.view_pages import compare_page, e, error_page, index_page, q, suite_page
from proctor.report.view_runs import RunRow, from_disk, from_index
from proctor.store import list_runs, shown

if TYPE_CHECKING:
    from proctor.report.view_trials import Picked
    from proctor.results import TrialRecord

DEFAULT_PORT = 8765
PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
REPORT_CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
              "img-src data:")
LOGS = ("trace.jsonl", "audit.jsonl")
LOADED = 8  # runs whose results the server keeps in memory (trial pages walk them)
FILTERS = ("q", "suite", "agent", "model", "status", "since", "until")


class Site:
    """What the server shows: the runs, found afresh on each request (runs come and go)."""

    def __init__(self, runs_dir: Path | None):
        self.runs_dir = runs_dir.resolve() if runs_dir else None
        self._cache: dict[str, tuple[float, bytes]] = {}
        self._loaded: dict[str, tuple[float, data.Run]] = {}  # the last LOADED runs read
        self._disk: dict[Path, tuple[tuple[int, ...], RunRow | None]] = {}
        self._lock = threading.Lock()

    def runs(self) -> list[RunRow]:
        rows = [from_index(r) for r in list_runs()]
        if self.runs_dir is None:
            return rows
        rows = [r for r in rows if Path(r.dir).is_relative_to(self.runs_dir)]
        known = {Path(r.dir) for r in rows}
        candidates = [self.runs_dir, *sorted(p for p in self.runs_dir.iterdir() if p.is_dir())]
        for d in candidates:
            if d not in known and (d / "run.json").is_file() and (row := self._from_disk(d)):
                rows.append(row)
        rows.sort(key=lambda r: r.started_at, reverse=True)
        return rows

    def _from_disk(self, run_dir: Path) -> RunRow | None:
        """from_disk, kept until the run's files change (reading a large results.json
        takes a second; every page asks for the runs)."""
        stamp = tuple(p.stat().st_mtime_ns if p.exists() else 0
                      for p in (run_dir / "run.json", run_dir / "results.json"))
        with self._lock:
            hit = self._disk.get(run_dir)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        row = from_disk(run_dir)
        with self._lock:
            self._disk[run_dir] = (stamp, row)
        return row

    def run(self, run_id: str, rows: list[RunRow] | None = None) -> RunRow | None:
        return next((r for r in (self.runs() if rows is None else rows)
                     if r.run_id == run_id), None)

    @staticmethod
    def _changed(run_dir: Path) -> float:
        results = run_dir / "results.json"
        source = results if results.is_file() else run_dir / "results.jsonl"
        return source.stat().st_mtime if source.exists() else 0.0

    def loaded(self, row: RunRow) -> data.Run:
        """The run's results (kept in memory until the run changes)."""
        changed = self._changed(Path(row.dir))
        with self._lock:
            hit = self._loaded.get(row.run_id)
            if hit and hit[0] == changed:
                return hit[1]
        run = data.load_run(row.dir, allow_partial=True)
        with self._lock:
            self._loaded.pop(row.run_id, None)
            self._loaded[row.run_id] = (changed, run)
            while len(self._loaded) > LOADED:  # the oldest read goes first
                self._loaded.pop(next(iter(self._loaded)))
        return run

    def report(self, row: RunRow) -> bytes:
        """The run's report.html: the file when it is up to date, else rendered (and kept
        in memory until the run changes); with the view's bar on top."""
        run_dir = Path(row.dir)
        page = run_dir / "report.html"
        changed = self._changed(run_dir)
        if page.is_file() and page.stat().st_mtime >= changed:
            return self._with_bar(row, page.read_bytes())
        with self._lock:
            hit = self._cache.get(row.run_id)
        if not (hit and hit[0] == changed):
            from proctor.report.html import render_html

            run = self.loaded(row)
            hit = (changed, render_html(run.results, run.config, run_dir).encode())
            with self._lock:
                self._cache[row.run_id] = hit
        return self._with_bar(row, hit[1])

    def _with_bar(self, row: RunRow, report: bytes) -> bytes:
        """report.html as the view shows it: a bar back to all runs (and on to the suite and
        the trials one by one) above it, and its links to each trial's page shown."""
        from proctor.report.view_trials import first_trial, trial_href

        first = first_trial(self.loaded(row).trials)
        walk = (f' · <a href="{trial_href(row.run_id, first.get("id"))}">its trials one by one'
                "</a> (failing first)" if first is not None else "")
        suite = (f' · suite <a href="/suites/{q(row.suite_key)}">{e(row.suite_name)}</a>'
                 if row.suite_key else "")
        bar = (f'<nav class="view-bar"><a href="/">all runs</a>{suite}{walk}</nav>').encode()
        style = (b"<style>.viewonly{display:inline}nav.view-bar{margin:0 0 10px}</style>")
        # The first <body> and </head> are the page's own: agent output in it is escaped.
        return report.replace(b"</head>", style + b"</head>", 1).replace(
            b"<body>", b"<body>" + bar, 1)

    def picked(self, run_id: str, trial_id: str, rows: list[RunRow] | None = None
               ) -> Picked | None:
        """The trial `trial_id` of run `run_id`, or None."""
        from proctor.report.view_trials import Picked

        row = self.run(run_id, rows)
        if row is None or row.gone:
            return None
        run = self.loaded(row)
        trial = next((t for t in run.trials if t.get("id") == trial_id), None)
        return None if trial is None else Picked(row, run, trial)

    def trial(self, run_id: str, trial_id: str) -> bytes | None:
        from proctor.report.view_trials import MAX_OTHER_RUNS, trial_page

        rows = self.runs()
        p = self.picked(run_id, trial_id, rows)
        if p is None:
            return None
        earlier: list[tuple[RunRow, list[TrialRecord]]] = []
        for r in rows:  # newest first: the suite's runs before this one
            if len(earlier) == MAX_OTHER_RUNS:
                break
            if (r.suite_key == p.row.suite_key and r.run_id != run_id and not r.gone
                    and r.started_at <= p.row.started_at and r.trials is not None):
                earlier.append((r, self.loaded(r).trials))
        return trial_page(p, earlier)

    def pair(self, a: tuple[str, str], b: tuple[str, str]) -> bytes | None:
        from proctor.report.view_trials import pair_page

        rows = self.runs()
        pa, pb = self.picked(*a, rows), self.picked(*b, rows)
        return None if pa is None or pb is None else pair_page(pa, pb)

    def index(self, query: dict[str, str]) -> bytes:
        where = shown(self.runs_dir) if self.runs_dir else "the run index"
        return index_page(self.runs(), where, query)

    def suite(self, key: str) -> bytes | None:
        runs = [r for r in self.runs() if r.suite_key == key]
        return suite_page(runs) if runs else None

    def compare(self, run_a: str, run_b: str) -> bytes | None:
        from proctor.report.compare import compare_runs

        rows = [self.run(run_a), self.run(run_b)]
        if any(r is None or not (Path(r.dir) / "results.json").is_file() for r in rows):
            return None
        from proctor.report.view_trials import compared_pairs

        row_a, row_b = (r for r in rows if r is not None)
        a, b = self.loaded(row_a), self.loaded(row_b)
        res = compare_runs(a.results, b.results)
        pairs = compared_pairs(res, row_a, row_b, a.trials, b.trials)
        return compare_page(run_a, run_b, res, pairs)


# ---- the server -----------------------------------------------------------------------------

_RUN_PATH = re.compile(r"^/runs/([^/]+)/(?:trials/([^/]+)/([^/]+))?$")
_TRIAL_PATH = re.compile(r"^/runs/([^/]+)/trials/([^/]+)/(?:vs/([^/]+)/([^/]+))?$")


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
        self._send(status, error_page(status.value, text))

    def do_HEAD(self) -> None:  # noqa: N802 (http.server's naming)
        self.do_GET()

    def do_GET(self) -> None:  # noqa: N802
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]").lower()
        if self.hosts is not None and host not in self.hosts:
            self._error(HTTPStatus.MISDIRECTED_REQUEST, "this server answers for "
                        "localhost only")
            return
        url = urlsplit(self.path)
        path = unquote(url.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items() if k in FILTERS}
        try:
            self._route(path, query)
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as err:  # a broken run directory must not take the server down
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(err).__name__}: {err}")

    def _route(self, path: str, query: dict[str, str]) -> None:
        if path == "/favicon.ico":  # browsers ask; a 404 would be a console error
            self.send_response(HTTPStatus.NO_CONTENT)
            self.end_headers()
            return
        if path in ("/", "/index.html"):
            self._send(HTTPStatus.OK, self.site.index(query))
            return
        if path.startswith("/suites/"):
            page = self.site.suite(path[len("/suites/"):])
            if page is None:
                self._error(HTTPStatus.NOT_FOUND, "no runs of that suite")
            else:
                self._send(HTTPStatus.OK, page)
            return
        if path.startswith("/compare/") and path.count("/") == 3:
            _, _, a, b = path.split("/")
            page = self.site.compare(a, b)
            if page is None:
                self._error(HTTPStatus.NOT_FOUND, "compare needs two finished runs")
            else:
                self._send(HTTPStatus.OK, page)
            return
        if (t := _TRIAL_PATH.match(path)) is not None:
            if t.group(3) is None:
                page = self.site.trial(t.group(1), t.group(2))
            else:
                page = self.site.pair((t.group(1), t.group(2)), (t.group(3), t.group(4)))
            if page is None:
                self._error(HTTPStatus.NOT_FOUND, f"no such trial: {path}")
            else:
                self._send(HTTPStatus.OK, page, csp=REPORT_CSP)
            return
        if path.startswith("/runs/") and (path.count("/") == 2 or (
                path.count("/") == 4 and path.split("/")[3] == "trials")):
            self.send_response(HTTPStatus.MOVED_PERMANENTLY)  # relative links need the slash
            self.send_header("Location", path + "/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        m = _RUN_PATH.match(path)
        row = self.site.run(m.group(1)) if m else None
        if m is None or row is None or row.gone:
            self._error(HTTPStatus.NOT_FOUND, f"nothing at {path}")
            return
        if m.group(2) is None:
            self._send(HTTPStatus.OK, self.site.report(row), csp=REPORT_CSP)
            return
        trial, name = m.group(2), m.group(3)
        trials = (Path(row.dir) / "trials").resolve()
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
