"""A box kept for another trial is made ready for it when its trial ends (pool.py
`Slot.ready_next`: NEWTRIAL asked at the release, answered while the box waits), so the next
trial's start asks nothing: and that trial still gets what NEWTRIAL gives, a new PID and IPC
namespace, and a new network namespace exactly when the last trial's counted anything."""

from __future__ import annotations

import itertools

import pytest

from proctor.sandbox.base import SandboxSpec
from proctor.sandbox.local.backend import LocalBackend
from proctor.sandbox.namespaces import missing
from proctor.sandbox.spawn import OP_NEWTRIAL, Spawner

NAMESPACES = "readlink /proc/self/ns/pid /proc/self/ns/ipc /proc/self/ns/net"


@pytest.fixture(autouse=True)
def _boxes_here():
    if missing() is not None:
        pytest.skip(f"no namespace box here: {missing()}")


async def test_a_kept_box_is_made_ready_for_its_next_trial_when_the_last_ends(tmp_path,
                                                                            monkeypatch):
    sent: list[int] = []  # the ops of every request of every spawner, in order
    real = Spawner._send

    def counted(self, op, job, **kw):
        sent.append(op)
        return real(self, op, job, **kw)

    monkeypatch.setattr(Spawner, "_send", counted)
    backend = LocalBackend(tmp_path / "scratch", pool_size=1)
    seen: list[tuple[str, str, str]] = []
    at_start: list[list[int]] = []
    at_end: list[list[int]] = []
    try:
        # 1 uses the network (a refused connection counts), 2 does not, 3 is the last.
        for i, command in enumerate(["exec 3<>/dev/tcp/127.0.0.1/9 2>/dev/null; :",
                                     ":", ":"]):
            mark = len(sent)
            sb = await backend.create(SandboxSpec(trial_id=f"t{i}", root=tmp_path / f"t{i}",
                                                  env={}))
            at_start.append(sent[mark:])
            try:
                res = await sb.exec(f"{NAMESPACES}; /bin/bash -c '{command}'", timeout=30)
                assert res.exit_code == 0, res
                pid, ipc, net = res.stdout.split()
                seen.append((pid, ipc, net))
            finally:
                mark = len(sent)
                await sb.close()
                at_end.append(sent[mark:])
        assert all(OP_NEWTRIAL not in ops for ops in at_start), at_start  # nothing asked
        assert all(OP_NEWTRIAL in ops for ops in at_end), at_end  # asked as each one ended
        for last, this in itertools.pairwise(seen):  # (a freed namespace's number is reused)
            assert this[0] != last[0] and this[1] != last[1]  # new PID and IPC namespaces
        assert seen[1][2] != seen[0][2]  # the first trial's network counted: a new one
        assert seen[2][2] == seen[1][2]  # the second's counted nothing: kept
    finally:
        await backend.close()
