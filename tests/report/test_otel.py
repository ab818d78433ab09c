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
    assert ca["gen_ai.tool.name"] == "run_command"
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
