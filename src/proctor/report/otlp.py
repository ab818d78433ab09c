"""Sending a run's traces (report/otel.py) to an OTLP/HTTP receiver: `proctor run
--otlp-endpoint URL` (or proctor.toml's `otlp_endpoint`) as trials finish, and `proctor
export RUN --format otel --otlp-endpoint URL` for a finished run.

Spans are POSTed to URL/v1/traces (to URL itself when it already ends with /v1/traces), as
protobuf (`application/x-protobuf`, what every OTLP/HTTP receiver takes) when the `otel`
extra (`opentelemetry-proto`) is installed, else as OTLP/JSON (`application/json`). Headers
(an API key) come from OTEL_EXPORTER_OTLP_TRACES_HEADERS or OTEL_EXPORTER_OTLP_HEADERS
(`key=value,key2=value2`, URL-encoded values), as OpenTelemetry's own exporters read them.

During a run, all the work (reading a trial's trace, building its spans, posting) is done by
one background thread: the trial loop only hands it the finished trial. A receiver that
fails or does not answer is a warning, never a failed run; after three failures in a row
the rest of the run's spans are not tried (the warning says how to send them later)."""

from __future__ import annotations

import base64
import json
import os
import queue
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from proctor.config import otlp_endpoint_problem
from proctor.errors import ProctorError, UsageError
from proctor.results import RunResults

TIMEOUT_S = 10.0  # per request
GIVE_UP_AFTER = 3  # failures in a row
BATCH_SPANS = 2000  # spans per request of an export (a receiver's body limit)


class SendError(ProctorError):
    """The receiver could not be reached or refused the spans (export: exit 1)."""

    exit_code = 1


def traces_url(endpoint: str) -> str:
    """Where to POST: ENDPOINT/v1/traces; a usage error (exit 2) for a bad URL."""
    if problem := otlp_endpoint_problem(endpoint):
        raise UsageError(f"--otlp-endpoint: {problem}")
    parts = urlsplit(endpoint)
    path = parts.path.rstrip("/")
    if not path.endswith("/v1/traces"):
        path += "/v1/traces"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _headers() -> dict[str, str]:
    raw = (os.environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
           or os.environ.get("OTEL_EXPORTER_OTLP_HEADERS") or "")
    out = {}
    for item in raw.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            out[unquote(key.strip())] = unquote(value.strip())
    return out


def encode(request: Mapping[str, Any]) -> tuple[bytes, str]:
    """The request's body and content type: protobuf when opentelemetry-proto is there."""
    try:
        from google.protobuf import json_format
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )
    except ImportError:
        return json.dumps(request, ensure_ascii=False).encode(), "application/json"
    return (json_format.ParseDict(as_protobuf_json(request), ExportTraceServiceRequest())
            .SerializeToString(), "application/x-protobuf")


def as_protobuf_json(request: Mapping[str, Any]) -> dict[str, Any]:
    """OTLP/JSON in protobuf's own JSON mapping: ids are hex in OTLP/JSON, base64 there."""
    doc: dict[str, Any] = json.loads(json.dumps(request))
    for rs in doc.get("resourceSpans") or []:
        for ss in rs.get("scopeSpans") or []:
            for span in ss.get("spans") or []:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return doc


def post(url: str, request: Mapping[str, Any], timeout: float = TIMEOUT_S) -> None:
    """POST one ExportTraceServiceRequest; SendError when it was not accepted."""
    import urllib.error
    import urllib.request

    body, kind = encode(request)
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={**_headers(), "Content-Type": kind})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as answer:
            answer.read()
    except urllib.error.HTTPError as e:
        detail = e.read(300).decode("utf-8", "replace").strip()
        raise SendError(f"{url} answered {e.code} {e.reason}"
                        + (f": {detail}" if detail else "")) from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise SendError(f"could not reach {url}: {reason}") from None


def send_run(run_dir: Path, results: RunResults, run: Mapping[str, Any],
             endpoint: str) -> tuple[int, str]:
    """A finished run's spans, in requests of about BATCH_SPANS spans (a trial's never
    split): (spans sent, the URL)."""
    from proctor.report import otel

    url = traces_url(endpoint)
    batch: list[dict[str, Any]] = []
    count = 0
    for group in otel.span_groups(run_dir, results, run):
        if batch and len(batch) + len(group) > BATCH_SPANS:
            post(url, otel.request(batch, run))
            count, batch = count + len(batch), []
        batch += group
    if batch:
        post(url, otel.request(batch, run))
    return count + len(batch), url


class RunSender:
    """`proctor run --otlp-endpoint`: each finished trial's spans, then the run's, sent by a
    background thread."""

    def __init__(self, endpoint: str, run_dir: Path, run: Mapping[str, Any]):
        self.url = traces_url(endpoint)
        self.run_dir, self.run = Path(run_dir), run
        self.run_id = str(run.get("run_id") or Path(run_dir).name)
        self.queue: queue.Queue[Any] = queue.Queue()
        self.windows: list[tuple[float, float]] = []
        self.sent = self.unsent = 0  # trials
        self.failures = 0  # in a row
        self.error: str | None = None  # the first failure
        self.thread = threading.Thread(target=self._work, name="proctor-otlp", daemon=True)
        self.thread.start()

    def trial_done(self, result: Any) -> None:
        """A finished trial (its TrialRecord): queued, never waited for."""
        self.queue.put(("trial", result))

    def finish(self, results: RunResults, wait_s: float = 2 * TIMEOUT_S) -> None:
        """The run's span, then wait (a bounded time) for everything queued to be sent."""
        self.queue.put(("run", results))
        self.queue.put(None)
        self.thread.join(wait_s)
        if self.thread.is_alive():
            self._warn(f"gave up waiting for {self.url} after {wait_s:.0f} s")
        elif self.unsent:
            self._warn(f"{self.unsent} of {self.sent + self.unsent} trials' spans were not sent "
                       f"({self.error})")

    def _warn(self, what: str) -> None:
        print(f"proctor: warning: OpenTelemetry: {what}; the run is not affected. Send them "
              f"later with: proctor export {self.run_dir} --format otel --otlp-endpoint "
              f"{self.url}", file=sys.stderr)

    def _work(self) -> None:
        from proctor.report import otel

        done = False
        while not done:
            items = [self.queue.get()]
            while True:  # what finished meanwhile goes in the same request
                try:
                    items.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            spans: list[dict[str, Any]] = []
            trials = 0
            for item in items:
                if item is None:
                    done = True
                    continue
                kind, what = item
                try:
                    if kind == "trial":
                        trial = what
                        trace = otel.read_trace(self.run_dir, str(trial.get("id")))
                        self.windows.append(otel._window(trial, trace))
                        spans += otel.trial_spans(self.run_id, trial, trace)
                        trials += 1
                    else:
                        spans.append(otel.run_span(what, self.run, self.windows))
                except Exception as e:  # a trial whose spans cannot be built: the rest go
                    self.error = self.error or f"building spans: {e!r}"
                    self.unsent += kind == "trial"
            if spans:
                self._post(otel.request(spans, self.run), trials)

    def _post(self, request: dict[str, Any], trials: int) -> None:
        if self.failures >= GIVE_UP_AFTER:
            self.unsent += trials
            return
        try:
            post(self.url, request)
        except Exception as e:  # never a traceback from this thread, never a failed run
            self.failures += 1
            self.unsent += trials
            if self.error is None:
                self.error = str(e) if isinstance(e, SendError) else f"could not send: {e!r}"
                self._warn(self.error)
            return
        self.failures = 0
        self.sent += trials


def export_to(run_dir: Path, results: RunResults, run: Mapping[str, Any],
              endpoint: str) -> int:
    """`proctor export RUN --format otel --otlp-endpoint URL`: send, say what was sent."""
    t0 = time.monotonic()
    count, url = send_run(run_dir, results, run, endpoint)
    trials = len(results.get("trials") or [])
    print(f"sent {count} spans ({trials} trials) to {url} in {time.monotonic() - t0:.1f} s")
    return 0
