"""The OpenTelemetry export (report/otel.py): a real run's OTLP/JSON read back by the
`opentelemetry-proto` messages (as a collector decodes it), its span tree, ids and attributes
checked against results.json."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tests.helpers.cli import Cli

pytest.importorskip("opentelemetry.proto", reason="the `otel` extra (opentelemetry-proto)")

SUITE = """
cli: jq
providers: [mock/solver]
help_modes: [none]
tasks:
  - id: count-users
    intent: Count the users in users.json and write the number into count.txt.
    setup: ["echo '[{\\"name\\":\\"ada\\"},{\\"name\\":\\"bob\\"}]' > users.json"]
    solution: ["cat users.json | jq length > count.txt", "cat count.txt"]
    assert:
      - verify: {run: cat count.txt, output_equals: "2"}
  - id: find-carol
    intent: Say whether carol is in users.json.
    setup: ["echo '[{\\"name\\":\\"ada\\"}]' > users.json"]
    solution: ["jq -r '.[].name' users.json | grep -q carol"]
    assert:
      - exit_code: 0
"""


def parse(doc: dict):
    """The OTLP/JSON document as the collector reads it: ids are hex in OTLP/JSON (not the
    base64 of protobuf's JSON mapping), the rest is protobuf JSON."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    doc = json.loads(json.dumps(doc))
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return json_format.Parse(json.dumps(doc), ExportTraceServiceRequest())


def spans_of(request) -> list:
    return [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]


def attrs(span) -> dict:
    from google.protobuf.json_format import MessageToDict

    out = {}
    for kv in span.attributes:
        (kind, value), = MessageToDict(kv.value).items()
        out[kv.key] = (int(value) if kind == "intValue" else
                       [next(iter(v.values())) for v in value.get("values", [])]
                       if kind == "arrayValue" else value)
    return out


@pytest.fixture(scope="module")
def otel_run(tmp_path_factory) -> Path:
    """`proctor run --format otel` of a passing and a failing task (mock/solver)."""
    root = tmp_path_factory.mktemp("otel")
    (root / "suite.yaml").write_text(SUITE)
    cli = Cli(root, env={"PROCTOR_HOME": str(root / "home")})
    done = cli("run", "suite.yaml", "--output-dir", "run", "--format", "otel", "-q",
               timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr  # find-carol fails, as written
    return root / "run"


def test_the_export_reads_back_as_an_otlp_request_with_the_runs_span_tree(otel_run):
    results = json.loads((otel_run / "results.json").read_text())
    doc = json.loads((otel_run / "otel.json").read_text())
    request = parse(doc)
    (resource,) = request.resource_spans
    assert {kv.key: kv.value.string_value for kv in resource.resource.attributes
            }["service.name"] == "proctor"
    spans = spans_of(request)
    by_id = {s.span_id: s for s in spans}
    assert len(by_id) == len(spans)  # ids unique
    assert {s.trace_id for s in spans} == {spans[0].trace_id}
    assert len(spans[0].trace_id) == 16 and any(spans[0].trace_id)
    assert all(len(s.span_id) == 8 and any(s.span_id) for s in spans)
    assert all(s.parent_span_id in by_id for s in spans if s.parent_span_id)
    (root,) = [s for s in spans if not s.parent_span_id]
    assert root.name.startswith("proctor run")
    assert attrs(root)["proctor.run_id"] == results["run_id"]
    assert attrs(root)["proctor.trials"] == 2 and root.status.code == 2  # a trial failed

    def children(span, prefix=""):
        return [s for s in spans if s.parent_span_id == span.span_id
                and s.name.startswith(prefix)]

    trials = {attrs(s)["proctor.trial_id"]: s for s in children(root)}
    assert set(trials) == {t["id"] for t in results["trials"]}
    for t in results["trials"]:
        span, a = trials[t["id"]], attrs(trials[t["id"]])
        assert span.name == f"trial {t['task_id']}"
        assert (a["proctor.task"], a["proctor.agent"], a["proctor.model"]) == (
            t["task_id"], "llm", "mock/solver")
        assert a["proctor.verdict"] == t["status"]
        assert a["proctor.score"] == t["composite_score"]
        assert root.start_time_unix_nano <= span.start_time_unix_nano
        assert span.end_time_unix_nano <= root.end_time_unix_nano
        # the checks, as events
        checks = {attrs(e)["proctor.check.name"]: attrs(e) for e in span.events
                  if e.name == "proctor.check"}
        assert {n: c["proctor.check.passed"] for n, c in checks.items()} == {
            c["name"]: c["passed"] for c in t["checks"]}
        # one chat span per model turn, GenAI semantic conventions
        turns = children(span, "chat ")
        assert len(turns) == t["turns"]
        for turn in turns:
            ta = attrs(turn)
            assert turn.kind == 3  # CLIENT
            assert (ta["gen_ai.operation.name"], ta["gen_ai.provider.name"],
                    ta["gen_ai.request.model"]) == ("chat", "mock", "solver")
            assert span.start_time_unix_nano <= turn.start_time_unix_nano
            # and OpenInference's names, for Phoenix
            assert (ta["openinference.span.kind"], ta["llm.model_name"],
                    ta["llm.token_count.prompt"]) == ("LLM", "solver",
                                                      ta["gen_ai.usage.input_tokens"])
        assert sum(attrs(x)["gen_ai.usage.input_tokens"] for x in turns) == t["tokens"]["input"]
        assert sum(attrs(x)["gen_ai.usage.output_tokens"] for x in turns) == \
            t["tokens"]["output"]

    ok, bad = trials["count-users.mock-solver.none.r0"], trials["find-carol.mock-solver.none.r0"]
    assert ok.status.code == 0 and bad.status.code == 2  # ERROR
    failed = next(t for t in results["trials"] if t["status"] == "fail")
    assert bad.status.message == failed["reason"]
    # turn -> tool call -> agent command -> its processes, with exit codes
    first = min(children(ok, "chat "), key=lambda s: s.start_time_unix_nano)
    (call,) = children(first, "execute_tool ")
    ca = attrs(call)
    assert ca["gen_ai.tool.name"] == ca["tool.name"] == "run_command"
    assert ca["openinference.span.kind"] == "TOOL"
    assert json.loads(ca["gen_ai.tool.call.arguments"]) == {
        "command": "cat users.json | jq length > count.txt"}
    assert ca["gen_ai.tool.call.result"].startswith("exit code: 0")
    (command,) = children(call, "command ")
    cmd = attrs(command)
    assert cmd["process.command_line"] == "cat users.json | jq length > count.txt"
    assert cmd["process.exit.code"] == 0 and command.status.code == 0
    assert cmd["gen_ai.tool.call.id"] == ca["gen_ai.tool.call.id"]
    processes = children(command, "process ")
    assert sorted(p.name for p in processes) == ["process cat", "process jq"]
    assert {attrs(p)["process.exit.code"] for p in processes} == {0}
    assert attrs(next(p for p in processes if p.name == "process jq"))[
        "process.command_args"] == ["jq", "length"]
    assert command.start_time_unix_nano >= first.end_time_unix_nano - 1_000_000
    # the failing command: its exit code, status ERROR
    (bad_command,) = [s for s in spans if s.name.startswith("command jq -r")]
    assert attrs(bad_command)["process.exit.code"] == 1 and bad_command.status.code == 2


def test_an_oracle_runs_commands_are_the_trials_own_spans(tmp_path, cli):
    """No model turn: each solution command is a child of its trial, its processes below."""
    (tmp_path / "suite.yaml").write_text(SUITE)
    done = cli("run", "suite.yaml", "--agent", "oracle", "--task", "count-users",
               "--output-dir", "run", "--format", "otel", "-q", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    spans = spans_of(parse(json.loads((tmp_path / "run" / "otel.json").read_text())))
    (trial,) = [s for s in spans if s.name.startswith("trial ")]
    assert attrs(trial)["proctor.agent"] == "oracle"
    assert not [s for s in spans if s.name.startswith("chat ")]
    commands = [s for s in spans if s.parent_span_id == trial.span_id]
    assert [attrs(c)["process.command_line"] for c in commands] == [
        "cat users.json | jq length > count.txt", "cat count.txt"]
    assert sorted(s.name for s in spans if s.parent_span_id == commands[0].span_id) == [
        "process cat", "process jq"]
    assert commands[0].end_time_unix_nano <= commands[1].start_time_unix_nano


def test_exporting_again_gives_the_same_ids(otel_run, tmp_path, cli):
    done = cli("export", str(otel_run), "--format", "otel", "--output", str(tmp_path / "t.json"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(tmp_path / "t.json")
    again = json.loads((tmp_path / "t.json").read_text())
    first = json.loads((otel_run / "otel.json").read_text())

    def ids(doc):
        return [(s["spanId"], s.get("parentSpanId"), s["name"])
                for s in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]]

    assert ids(again) == ids(first) and len(ids(first)) > 10


def test_span_ids_are_derived_from_the_run_and_trial_and_never_zero():
    from proctor.report import otel

    assert otel.trace_id("r1") == otel.trace_id("r1") != otel.trace_id("r2")
    assert otel.span_id("r1", "t1") != otel.span_id("r1", "t2") != otel.span_id("r2", "t2")
    assert len(otel.trace_id("r1")) == 32 and len(otel.span_id("r1", "t")) == 16
    assert otel._nonzero("0" * 16) == "0" * 15 + "1"


class Receiver:
    """A real OTLP/HTTP receiver on loopback: each POST decoded with the proto package as a
    collector does (protobuf, or OTLP/JSON by its content type)."""

    def __init__(self, status: int = 200):
        import http.server
        import threading

        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        self.requests: list[tuple[str, str, dict, object]] = []  # path, type, headers, message
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                kind = self.headers["Content-Type"]
                message = (ExportTraceServiceRequest.FromString(body)
                           if kind == "application/x-protobuf" else parse(json.loads(body)))
                outer.requests.append((self.path, kind, {k.lower(): v for k, v in self.headers.items()}, message))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def spans(self) -> list:
        return [s for *_, m in self.requests for s in spans_of(m)]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def tree(spans) -> set:
    return {(s.span_id, s.parent_span_id, s.name) for s in spans}


def test_a_run_sends_each_trials_spans_as_it_finishes(tmp_path, receiver, cli):
    (tmp_path / "suite.yaml").write_text(SUITE)
    done = cli("run", "suite.yaml", "--output-dir", "run", "--concurrency", "1", "-q",
               "--otlp-endpoint", receiver.url, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr  # find-carol fails, as written
    assert "warning" not in done.stderr
    assert {(path, kind) for path, kind, *_ in receiver.requests} == {
        ("/v1/traces", "application/x-protobuf")}
    # one trial at a time: its spans went as it finished, the run's last
    assert len(receiver.requests) >= 2
    first = spans_of(receiver.requests[0][3])
    assert first[0].name.startswith("trial ")
    assert spans_of(receiver.requests[-1][3])[-1].name.startswith("proctor run")
    # the same spans a later export gives
    exported = cli("export", "run", "--format", "otel")
    assert exported.returncode == 0, exported.stderr
    assert tree(receiver.spans()) == tree(spans_of(parse(json.loads(
        (tmp_path / "run" / "otel.json").read_text()))))
    assert "otlp_endpoint" not in json.loads((tmp_path / "run" / "run.json").read_text())[
        "options"]


def test_export_sends_a_finished_run(otel_run, tmp_path, receiver, cli):
    before = (otel_run / "otel.json").stat().st_mtime_ns
    done = cli("export", str(otel_run), "--format", "otel", "--otlp-endpoint",
               receiver.url + "/otlp/", env={"OTEL_EXPORTER_OTLP_HEADERS":
                                              "x-api-key=secret%20one,x-team=evals"})
    assert done.returncode == 0, done.stderr
    sent = spans_of(parse(json.loads((otel_run / "otel.json").read_text())))
    assert done.stdout.strip().startswith(
        f"sent {len(sent)} spans (2 trials) to {receiver.url}/otlp/v1/traces in ")
    (path, kind, headers, _), = receiver.requests
    assert path == "/otlp/v1/traces" and kind == "application/x-protobuf"
    assert (headers["x-api-key"], headers["x-team"]) == ("secret one", "evals")
    assert tree(receiver.spans()) == tree(sent)
    assert (otel_run / "otel.json").stat().st_mtime_ns == before  # sent, not written


def test_without_the_proto_package_spans_go_as_otlp_json(receiver, monkeypatch):
    import builtins

    from proctor.report import otel, otlp

    real = builtins.__import__

    def no_proto(name, globals=None, *args, **kw):  # for proctor's sender, not the receiver
        if (name.startswith(("opentelemetry", "google.protobuf"))
                and (globals or {}).get("__name__") == "proctor.report.otlp"):
            raise ImportError(name)
        return real(name, globals, *args, **kw)

    trial = {"id": "t.r0", "task_id": "t", "status": "fail", "reason": "failed: x",
             "started_at": "2026-12-06T09:00:00Z", "duration_s": 1.5}
    spans = otel.trial_spans("run-1", trial, [{"type": "command", "command": "ls", "argv": [],
                                               "exit_code": 2, "started_at": 1796547600.2,
                                               "duration_s": 0.1, "source": "agent"}])
    monkeypatch.setattr(builtins, "__import__", no_proto)
    otlp.post(otlp.traces_url(receiver.url + "/v1/traces"), otel.request(spans, {}))
    monkeypatch.undo()
    (path, kind, _, message), = receiver.requests
    assert (path, kind) == ("/v1/traces", "application/json")
    got = spans_of(message)
    assert [s.name for s in got] == ["trial t", "command ls"]
    assert got[0].status.code == 2 and got[0].status.message == "failed: x"
    assert attrs(got[1])["process.exit.code"] == 2


def test_a_dead_endpoint_is_a_warning_and_the_run_goes_on(tmp_path, cli):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "suite.yaml").write_text(SUITE)
    done = cli("run", "suite.yaml", "--task", "count-users", "--output-dir", "run", "-q",
               "--otlp-endpoint", f"http://127.0.0.1:{port}", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert f"warning: OpenTelemetry: could not reach http://127.0.0.1:{port}/v1/traces" in \
        done.stderr
    assert "proctor export" in done.stderr and "--otlp-endpoint" in done.stderr
    assert json.loads((tmp_path / "run" / "results.json").read_text())["summary"]["passed"] == 1
    # the export says so and fails (exit 1), in one line
    bad = cli("export", "run", "--format", "otel", "--otlp-endpoint", f"http://127.0.0.1:{port}")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1, bad.stderr
    assert "could not reach" in bad.stderr


def test_a_receiver_that_refuses_is_a_warning(tmp_path, cli):
    r = Receiver(status=500)
    try:
        (tmp_path / "suite.yaml").write_text(SUITE)
        done = cli("run", "suite.yaml", "--task", "count-users", "--output-dir", "run", "-q",
                   "--otlp-endpoint", r.url, timeout=300)
    finally:
        r.close()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "answered 500" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("args", [
    ("run", "suite.yaml", "--otlp-endpoint", "localhost:4318"),
    ("run", "suite.yaml", "--otlp-endpoint", "http://"),
    ("run", "suite.yaml", "--otlp-endpoint", "http://localhost:port"),
    ("export", "run", "--format", "otel", "--otlp-endpoint", "ftp://collector"),
    ("export", "run", "--format", "atif", "--otlp-endpoint", "http://localhost:4318"),
])
def test_a_bad_endpoint_is_a_usage_error(tmp_path, cli, args):
    (tmp_path / "suite.yaml").write_text(SUITE)
    (tmp_path / "run").mkdir()
    done = cli(*args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "--otlp-endpoint" in done.stderr
    assert not (tmp_path / "home" / "runs").exists() and list((tmp_path / "run").iterdir()) == []


def test_proctor_toml_names_the_endpoint(tmp_path, cli, receiver):
    (tmp_path / "suite.yaml").write_text(SUITE)
    (tmp_path / "proctor.toml").write_text('otlp_endpoint = "collector:4318"\n')
    bad = cli("run", "suite.yaml")
    assert bad.returncode == 2 and "proctor.toml:1:1: otlp_endpoint:" in bad.stderr
    (tmp_path / "proctor.toml").write_text(f'otlp_endpoint = "{receiver.url}"\n')
    done = cli("run", "suite.yaml", "--task", "count-users", "--output-dir", "run", "-q",
               timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert {s.name for s in receiver.spans()} >= {"trial count-users", "execute_tool run_command"}


def test_proctor_help_never_imports_the_otel_modules():
    import subprocess
    import sys

    code = ("import sys, runpy; sys.argv = ['proctor', '--help']\n"
            "try: runpy.run_module('proctor.cli', run_name='__main__')\n"
            "except SystemExit: pass\n"
            "bad = [m for m in sys.modules if m.startswith(('opentelemetry', 'google.protobuf',"
            " 'proctor.report.otel', 'proctor.report.otlp', 'urllib.request'))]\n"
            "assert not bad, bad")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_senders_thread_never_dies_on_a_surprise(tmp_path, monkeypatch, capfd):
    """Whatever fails while sending is one warning; the run's thread carries on."""
    import time

    from proctor.report import otlp

    calls = []

    def broken(url, request, timeout=otlp.TIMEOUT_S):
        calls.append(url)
        raise RuntimeError("surprise")

    monkeypatch.setattr(otlp, "post", broken)
    sender = otlp.RunSender("http://127.0.0.1:9", tmp_path, {"run_id": "r1"})
    for n in range(5):
        sender.trial_done({"id": f"t.r{n}", "task_id": "t", "status": "pass"})
        while not sender.queue.empty():  # taken: the next one is a request of its own
            time.sleep(0.005)
    sender.finish({"run_id": "r1", "trials": []}, wait_s=5)
    assert not sender.thread.is_alive()
    err = capfd.readouterr().err
    assert "Traceback" not in err and err.count("RuntimeError('surprise')") == 2
    assert f"of {sender.sent + sender.unsent} trials' spans were not sent" in err
    assert len(calls) == otlp.GIVE_UP_AFTER  # then it stops trying
