"""`llm_as_judge`: scores against the threshold, malformed answers, code fences, inputs —
through the real openai SDK against the `proctor mock-llm` subprocess, and in-process mocks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proctor.checks._judge import parse_verdict
from proctor.checks.base import CheckContext
from proctor.checks.llm_as_judge import Config, evaluate
from proctor.config import ProctorConfig
from proctor.model import RunOptions, Trial
from proctor.record.recorder import Recorder
from proctor.redact import Redactor
from proctor.sandbox.local.backend import LocalSandbox
from proctor.services.base import ServiceHandle
from tests.helpers.llm import make_task, wire_config


class RecordedMock(ServiceHandle):
    def __init__(self, reqs: list[dict[str, Any]]):
        super().__init__(name="smtp", kind="http_mock", host="127.0.0.1", port=1, url="http://x")
        self._reqs = reqs

    async def requests(self) -> list[dict[str, Any]]:
        return self._reqs


@pytest.fixture
async def judge_ctx(tmp_path: Path):
    sandboxes: list[LocalSandbox] = []

    def make(config: dict[str, Any], *, output: str = "hello world",
             services: dict[str, Any] | None = None) -> CheckContext:
        sandbox = LocalSandbox(tmp_path / f"sb{len(sandboxes)}", env={})
        sandboxes.append(sandbox)
        task = make_task(tmp_path, dialect="scenario")
        trial = Trial(id="task.r0", task_id="task", agent="llm", model=None, help_mode=None,
                      replica=0)
        return CheckContext(task=task, trial=trial, sandbox=sandbox, commands=[],
                            agent_output=output,
                            recorder=Recorder(tmp_path / f"trial{len(sandboxes)}", Redactor()),
                            options=RunOptions(config=ProctorConfig.model_validate(config)), services=dict(services or {}))

    yield make
    for sb in sandboxes:
        await sb.close()


def judge_cfg(criteria: str, **kw: Any) -> Config:
    return Config(model=kw.pop("model", "openai/judge"), criteria=criteria, **kw)


@pytest.mark.parametrize(("criteria", "threshold", "score", "passed"), [
    ("JUDGE-HIGH: the output greets", 0.5, 0.9, True),   # above
    ("JUDGE-AT: the output greets", 0.5, 0.5, True),     # at: >= passes
    ("JUDGE-LOW: the output greets", 0.5, 0.2, False),   # below, though the judge said passed
    ("JUDGE-HIGH: the output greets politely", 0.95, 0.9, False),
])
async def test_score_against_threshold(wire_server, judge_ctx, criteria, threshold, score, passed):
    ctx = judge_ctx(wire_config(wire_server.url, "openai"))
    out = await evaluate(judge_cfg(criteria, pass_threshold=threshold), ctx)
    assert out.error is None
    assert out.score == pytest.approx(score)
    assert out.passed is passed
    assert out.details["answers"] == 1
    sent = wire_server.received(criteria)[0]["body"]
    assert "hello world" in sent["messages"][-1]["content"]  # agent_output is what is judged
    assert sent["temperature"] == 0


async def test_code_fenced_json_is_accepted(wire_server, judge_ctx):
    out = await evaluate(judge_cfg("JUDGE-FENCE: greets"),
                         judge_ctx(wire_config(wire_server.url, "openai")))
    assert out.error is None and out.score == 0.75 and out.passed


async def test_scores_are_clamped(wire_server, judge_ctx):
    out = await evaluate(judge_cfg("JUDGE-CLAMP: greets", model="anthropic/judge"),
                         judge_ctx(wire_config(wire_server.url, "anthropic")))
    assert out.error is None and out.score == 1.0


async def test_malformed_answer_is_retried_once(wire_server, judge_ctx):
    ctx = judge_ctx(wire_config(wire_server.url, "openai"))
    out = await evaluate(judge_cfg("JUDGE-BAD-ONCE: greets"), ctx)
    assert out.error is None and out.score == 0.8 and out.details["answers"] == 2
    second = wire_server.received("JUDGE-BAD-ONCE")[1]["body"]["messages"]
    assert second[-2] == {"role": "assistant", "content": "I think it is quite good."}
    assert "not a JSON object" in second[-1]["content"]
    ctx.recorder.close()
    calls = [json.loads(x) for x in ctx.recorder.trace_path.read_text().splitlines()]
    assert [c["purpose"] for c in calls] == ["judge", "judge"]


async def test_malformed_twice_is_a_check_error(wire_server, judge_ctx):
    out = await evaluate(judge_cfg("JUDGE-BAD: greets"),
                         judge_ctx(wire_config(wire_server.url, "openai")))
    assert out.error is not None and "twice" in out.error and "Really, it is fine." in out.error
    assert len(wire_server.received("JUDGE-BAD: greets")) == 2


async def test_provider_down_is_a_check_error(tmp_path, judge_ctx):
    (tmp_path / "down.yaml").write_text("- say: x\n  fail: {status: 503, times: 9}\n")
    ctx = judge_ctx({"retry": {"base_delay": 0.001, "max_attempts": 2}})
    out = await evaluate(judge_cfg("anything", model="mock/down.yaml"), ctx)
    assert out.error is not None and "HTTP 503" in out.error


async def test_aliases_resolve_through_env_and_config(tmp_path, judge_ctx, monkeypatch):
    (tmp_path / "j.yaml").write_text("""- say: '{"score": 1, "passed": true, "reason": "ok"}'\n""")
    out = await evaluate(judge_cfg("x", model="paragon-max"), judge_ctx({}))
    assert out.error is not None and "PROCTOR_JUDGE_MAX" in out.error
    out = await evaluate(judge_cfg("x", model="paragon-max"),
                         judge_ctx({"judge": {"max": "mock/j.yaml"}}))
    assert out.error is None and out.passed
    monkeypatch.setenv("PROCTOR_JUDGE_FAST", "mock/j.yaml")
    out = await evaluate(judge_cfg("x", model="paragon-fast"), judge_ctx({}))
    assert out.error is None and out.passed


async def test_input_from_workspace_and_http_mock_field(tmp_path, judge_ctx):
    # A script that echoes nothing; we read what it was sent from the trace.
    (tmp_path / "j.yaml").write_text("""- say: '{"score": 0.6, "passed": true, "reason": "ok"}'\n""")
    ctx = judge_ctx({})
    (ctx.workdir / "notes.txt").write_text("WORKSPACE-NOTE")
    (ctx.workdir / "blob.bin").write_bytes(b"\0\1BINARY")
    (ctx.workdir / ".git").mkdir()
    (ctx.workdir / ".git" / "HEAD").write_text("GIT-INTERNALS")
    out = await evaluate(judge_cfg("x", model="mock/j.yaml", input_from="workspace"), ctx)
    assert out.error is None and out.score == 0.6
    smtp = RecordedMock([{"method": "POST", "path": "/send", "body": {"text": "MAIL-ONE"}},
                         {"method": "POST", "path": "/send", "body": {"text": "MAIL-TWO"}}])
    ctx2 = judge_ctx({}, services={"smtp": smtp})
    out = await evaluate(judge_cfg("x", model="mock/j.yaml",
                                   input_from="smtp.last_request.body"), ctx2)
    assert out.error is None
    for c in (ctx, ctx2):
        c.recorder.close()
    sent = [json.loads(x)["request"]["messages"][0]["content"]
            for c in (ctx, ctx2) for x in c.recorder.trace_path.read_text().splitlines()]
    assert "=== notes.txt ===\nWORKSPACE-NOTE" in sent[0]
    assert "BINARY" not in sent[0] and "GIT-INTERNALS" not in sent[0]
    assert "MAIL-TWO" in sent[1] and "MAIL-ONE" not in sent[1]
    out = await evaluate(judge_cfg("x", model="mock/j.yaml", input_from="nosuch.request_count"),
                         judge_ctx({}))
    assert out.error is not None and "no service named 'nosuch'" in out.error


@pytest.mark.parametrize(("text", "expected"), [
    ('{"score": 0.4, "passed": false, "reason": "r"}', (0.4, "r", False)),
    ('```\n{"score": "0.7", "reason": "r"}\n```', (0.7, "r", None)),
    ('Verdict: {"score": -3, "passed": true, "reason": "r"} thanks', (0.0, "r", True)),
    ('{"passed": true}', None),
    ('{"score": true}', None),
    ("no json here", None),
    ('[0.5]', None),
])
def test_parse_verdict(text, expected):
    assert parse_verdict(text) == expected


def test_the_judge_reads_only_the_bytes_it_sends(tmp_path):
    """Issue 25.4: a 2 GiB (sparse) workspace file took proctor to 2 GiB of memory; only the
    start of each file that can be sent is read now. Symlinks out are never followed."""
    import tracemalloc

    from proctor.checks._judge import FILE_LIMIT, workspace_text

    with open(tmp_path / "huge.txt", "wb") as f:
        f.write(b"START line\n" * 10_000)
        f.truncate(2 << 30)
    (tmp_path / "out").symlink_to("/etc/hostname")
    deep = tmp_path
    for _ in range(300):  # deeper than Python's recursion would go at 3 frames a level
        deep = deep / "d"
        deep.mkdir()
    (deep / "note.txt").write_text("DEEP-NOTE")
    tracemalloc.start()
    text = workspace_text(tmp_path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20 * FILE_LIMIT * 4, peak
    assert "=== huge.txt ===\nSTART" in text and "DEEP-NOTE" in text
    assert "=== out ===" not in text
