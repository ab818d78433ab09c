"""What the agent did, written to the audit log before any check reads it (SPEC §3's
audit.jsonl): its file writes (its program's own state apart, in the trace), its HTTP calls
through the egress proxy and to the trial's mocks, its database writes; and, for
`secrets_in_logs`, every name and byte of what it wrote, and every byte its commands printed,
searched for the trial's secrets."""

from __future__ import annotations

import json

from proctor.agents.base import Agent
from proctor.record import fsdiff
from proctor.record.recorder import Recorder
from proctor.record.secretscan import SecretScanner
from proctor.sandbox.base import Sandbox
from proctor.sandbox.egress import EgressEvent
from proctor.services.base import DbWrite, ServiceHandle
from proctor.trial.forbidden import Observed


async def audit(sandbox: Sandbox, before: fsdiff.Snapshot, after: fsdiff.Snapshot,
                 handles: dict[str, ServiceHandle], egress: list[EgressEvent],
                 recorder: Recorder, agent_state: tuple[str, ...] = (),
                 scanner: SecretScanner | None = None, deadline: float | None = None,
                 ) -> Observed:
    """Write what the agent changed to audit.jsonl, before any check reads it. Writes to
    the agent program's own state (`agent_state` prefixes) go to the trace instead. With a
    `scanner` (secrets_in_logs), everything the agent wrote is searched for secrets."""
    writes = fsdiff.diff(before, after)
    own = [w for w in writes if _within(w["path"], agent_state)]
    for w in own:
        recorder.trace({"type": "agent_state_write", "path": w["path"], "change": w["change"],
                        "size": w["size"], "kind": w["kind"]})
    seen = Observed(file_writes=[w for w in writes if w not in own], workdir=sandbox.workdir,
                    home=sandbox.env.get("HOME", ""))
    for w in seen.file_writes:
        recorder.audit("file_write", w)
    if scanner is not None:
        mine = {p: e for p, e in after.items() if before.get(p) != e
                and not _within(p, agent_state)}
        await scan_written(sandbox, mine, scanner, deadline)
        seen.secrets_seen |= scanner.found
    for call in egress:
        if "from_service" not in call:  # a side container's own calls are not the agent's
            seen.http_calls.append(call)
            seen.texts.append(json.dumps(call, default=str))
        recorder.audit("http_call", call)
    for name, h in handles.items():
        for req in await h.calls():
            mocked = {"service": name, **req}
            seen.http_calls.append(mocked)
            seen.texts.append(json.dumps(req, default=str))  # headers, query, body
            recorder.audit("http_call", mocked)
        for db in await h.db_writes():
            write: DbWrite = {"service": name, **db}
            seen.db_writes.append(write)
            recorder.audit("db_write", write)
    return seen


async def scan_written(sandbox: Sandbox, written: fsdiff.Snapshot, scanner: SecretScanner,
                        deadline: float | None) -> None:
    """Every name, symlink target and byte (streamed, any size) of what the agent created or
    changed, searched for secrets: a secret used as a directory name leaks too. Raises
    FilesLimit (naming it) when the files cannot be read in full."""
    for path, entry in written.items():
        scanner.scan(f"name\0{path}", path)
        if entry.kind == "symlink":
            scanner.scan(f"link\0{path}", entry.digest.removeprefix("-> "))
    ends: dict[str, int] = {}

    def sink(path: str, offset: int, chunk: bytes) -> None:
        if offset < 0 or ends.get(path, 0) != offset:  # the end, or a hole: no continuation
            scanner.end_text(path)
        if offset >= 0:
            scanner.feed_text(path, chunk)
            ends[path] = offset + len(chunk)

    await sandbox.stream_files([p for p, e in written.items() if e.kind == "file"], sink,
                               deadline)


class AgentOutput:
    """Every byte the agent's commands print, scanned for secrets before any cut."""

    def __init__(self, secrets: dict[str, str]):
        self._scanner = SecretScanner(secrets)
        self.active = False

    def feed(self, fd: int, chunk: bytes) -> None:
        if self.active and self._scanner:
            self._scanner.feed_output(fd, chunk)

    @property
    def found(self) -> set[str]:
        return self._scanner.found


def _within(path: str, prefixes: tuple[str, ...]) -> bool:
    """Whether `path` starts with one of `prefixes`, or is a directory one of them names
    (`DIR/`)."""
    return bool(prefixes) and (path.startswith(prefixes) or any(
        p.endswith("/") and path == p[:-1] for p in prefixes))


def agent_state(agent: Agent, sandbox: Sandbox) -> tuple[str, ...]:
    """Where an external agent program keeps its own state (absolute, as the sandbox sees
    it): its writes there are not the agent's doing in the task."""
    paths = agent.state_paths
    home = sandbox.env.get("HOME", "")
    return tuple(p if p.startswith("/") else f"{home}/{p}" for p in paths if home or p[:1] == "/")
