"""A task's blocks (`TaskDef.resources`, `network`, `forbidden`), the workspace diff and the
egress proxy's events are TypedDicts (issue 39): the type checker holds their readers to the
declared keys, and this holds the writers, which it cannot see through (a pydantic dump, an
event built up key by key), to the same declaration: every key written is declared with its
type, every declared key is written by some loader or path."""

from __future__ import annotations

import asyncio
import types
import typing
from typing import Any, Literal, get_args, get_origin, get_type_hints, is_typeddict

from proctor.model import ForbiddenRules, NetworkPolicy, TaskResources
from proctor.record.fsdiff import FileChange, diff
from proctor.sandbox import egress
from proctor.sandbox.base import Entry
from proctor.sandbox.egress import EgressEvent, EgressProxy
from proctor.spec.load import load_specs
from tests.helpers.harbor import TOML, task


def _fits(value: Any, hint: Any) -> bool:
    origin = get_origin(hint)
    if is_typeddict(hint):
        return _problems(value, hint) == []
    if origin is Literal:
        return value in get_args(hint)
    if origin is list:
        (item,) = get_args(hint)
        return isinstance(value, list) and all(_fits(v, item) for v in value)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, h) for h in get_args(hint))
    if hint is float:  # a number written as 600 is a float for the type checker too
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, hint)


def _problems(value: Any, td: Any) -> list[str]:
    """What in `value` the TypedDict `td` does not declare, or declares otherwise."""
    hints = get_type_hints(td)
    if not isinstance(value, dict):
        return [f"not a dict: {value!r}"]
    out = [f"{k!r} is not declared" for k in value if k not in hints]
    out += [f"{k!r} = {v!r} is not {hints[k]}" for k, v in value.items()
            if k in hints and not _fits(v, hints[k])]
    out += [f"{k!r} is required" for k in td.__required_keys__ if k not in value]
    return out


SCENARIO = """\
version: 1
task: {prompt: go}
resources: {memory: 2g, cpu: 1.5, timeout: 600, disk: 1g}
network: {egress: deny, allow: [api.example.com]}
forbidden: {secrets_in_logs: deny, http_except: [smtp], file_writes_outside: [.],
            db_writes_outside: [orders]}
invariants:
  ok: {description: d, check: {type: file_exists, path: x}}
"""

HARBOR_VERIFIER_PUBLIC = (TOML.replace("storage_mb = 10240", "storage_mb = 10240\nallow_internet = false")
                          .replace("[verifier]\ntimeout_sec = 120.0",
                                   "[verifier]\ntimeout_sec = 120.0\nnetwork_mode = \"public\""))


def test_the_loaders_write_the_declared_blocks(tmp_path):
    (tmp_path / "s.yaml").write_text(SCENARIO)
    (scenario,) = load_specs([str(tmp_path / "s.yaml")]).tasks
    (harbor,) = load_specs([str(task(tmp_path, toml=HARBOR_VERIFIER_PUBLIC))]).tasks
    for t in (scenario, harbor):
        assert _problems(t.resources, TaskResources) == [], t.dialect
        assert _problems(t.network, NetworkPolicy) == [], t.dialect
        assert _problems(t.forbidden, ForbiddenRules) == [], t.dialect
    # Every declared key has a writer (a key no loader writes is a stale declaration).
    assert {*scenario.resources, *harbor.resources} == set(get_type_hints(TaskResources))
    assert {*scenario.network, *harbor.network} == set(get_type_hints(NetworkPolicy))
    assert set(scenario.forbidden) == set(get_type_hints(ForbiddenRules))
    assert harbor.network["checks"] == {"egress": "allow", "allow": []}


def test_the_workspace_diff_writes_file_changes():
    before = {"/w/kept": Entry("file", 1, "a"), "/w/gone": Entry("file", 2, "b"),
              "/w/d": Entry("dir", 0, "")}
    after = {"/w/kept": Entry("file", 3, "c"), "/w/new": Entry("symlink", 0, "-> x"),
             "/w/d": Entry("dir", 0, "")}
    changes = diff(before, after)
    assert [(c["path"], c["change"]) for c in changes] == [
        ("/w/gone", "deleted"), ("/w/kept", "modified"), ("/w/new", "created")]
    for change in changes:
        assert _problems(change, FileChange) == [], change


async def test_the_egress_proxy_writes_egress_events(monkeypatch):
    """A request refused by the policy, and one allowed whose host cannot be reached: each
    event, and a side container's (tagged by the trial), is an EgressEvent."""
    from proctor.trial.provision import _tagged

    async def getaddrinfo(host, port, **kw):
        import socket
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port))]

    async def open_connection(host, port):
        raise OSError("no network in this test")

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(egress.asyncio, "open_connection", open_connection)

    class Writer:
        def write(self, data): pass
        async def drain(self): pass
        def close(self): pass

    events: list[EgressEvent] = []
    for proxy in (EgressProxy("deny", ["allowed.test"], events.append),
                  EgressProxy("deny", ["allowed.test"], _tagged(events.append, "side"))):
        for host in ("refused.test", "allowed.test"):
            reader = asyncio.StreamReader()
            reader.feed_data(f"GET http://{host}/x HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            reader.feed_eof()
            await proxy.handle(reader, Writer())
    assert [(e["host"], e["status"], e.get("from_service")) for e in events] == [
        ("refused.test", 403, None), ("allowed.test", 502, None),
        ("refused.test", 403, "side"), ("allowed.test", 502, "side")]
    for event in events:
        assert _problems(event, EgressEvent) == [], event


def test_the_checker_finds_a_stray_key():
    """Not a test that passes by finding nothing."""
    assert _problems({"cpu": 1, "gpus": 2}, TaskResources) == ["'gpus' is not declared"]
    assert _problems({"egress": "maybe"}, NetworkPolicy) == [
        "'egress' = 'maybe' is not typing.Literal['allow', 'deny']"]
    assert _problems({"path": "/x", "change": "created", "size": 1}, FileChange) == [
        "'kind' is required"]
