"""A trial in a box the last trial left wiped, with nothing run or written since, is judged
against a snapshot taken as empty without reading the places (placefiles.py `pristine`).
What would make that wrong, through the real `proctor run` in one reused box: the last
agent's leftovers (files in every place, a locked tree, a daemon writing later) would show
as the next trial's own writes, and what setup wrote between the wipe and the agent would be
missing from the snapshot before it, so the agent deleting it would go unrecorded."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.security import trial
from tests.security.test_reuse import BOX, _box, _outputs

PLACES = "$PROCTOR_WORKDIR $HOME /tmp /dev/shm"
LEAVE = [
    BOX,
    f"for d in {PLACES}; do echo left > $d/left; mkdir -p $d/dir/sub; echo x > $d/dir/sub/f; done",
    "chmod 000 /tmp/dir/sub /tmp/dir",
    "ln -s /etc/passwd $HOME/link && mkfifo /dev/shm/fifo",
    "(setsid sh -c 'sleep 1; echo late > /tmp/late; echo late > $PROCTOR_WORKDIR/late' "
    "> /dev/null 2>&1 &)",
]
# The box's first trial after the wipe: nothing run, nothing written before its agent.
PLAIN = [BOX, "sleep 1.5", "echo mine > mine.txt"]  # long enough for a daemon to write
SETUP = f"for d in {PLACES}; do echo set > $d/planted; done"
REMOVE = [BOX, f"for d in {PLACES}; do rm $d/planted; done", "echo b > b.txt"]


def _spec() -> str:
    def listed(commands: list[str]) -> str:
        return "\n".join(f"              - {json.dumps(c)}" for c in commands)

    return f"""
        cli: sh
        tasks:
          - id: a-leave
            intent: leave things behind
            solution:
{listed(LEAVE)}
            assert: [{{exit_code: 0}}]
          - id: b-plain
            intent: write one file
            solution:
{listed(PLAIN)}
            assert: [{{file_contains: {{path: mine.txt, text: mine}}}}]
          - id: c-setup
            intent: remove what setup wrote
            setup: [{json.dumps(SETUP)}]
            solution:
{listed(REMOVE)}
            assert: [{{exit_code: 0}}]
        """


def _writes(run_dir: Path, trial_id: str) -> set[tuple[str, str]]:
    """(path, change) of every file the audit says the trial's agent changed."""
    lines = (run_dir / "trials" / trial_id / "audit.jsonl").read_text().splitlines()
    return {(e["details"]["path"], e["details"]["change"]) for e in map(json.loads, lines)
            if e["type"] == "file_write"}


def test_a_wiped_box_is_judged_on_what_its_own_trial_did(run_spec, tmp_path):
    r = run_spec(_spec(), "--concurrency", "1")
    run_dir = tmp_path / "run0"
    leave, plain, setup = trial(r, "a-leave"), trial(r, "b-plain"), trial(r, "c-setup")
    assert leave["status"] == "pass", _outputs(run_dir, leave["id"])
    # One box for all three, or the snapshot taken as empty was never used.
    assert _box(run_dir, leave["id"]) == _box(run_dir, plain["id"]) == _box(run_dir, setup["id"])
    # The hostile side: none of a-leave's files, nor its daemon's, is b-plain's.
    assert plain["status"] == "pass", _outputs(run_dir, plain["id"])
    assert _writes(run_dir, plain["id"]) == {("mine.txt", "created")}
    # What setup wrote is in the snapshot before the agent: its removal is recorded.
    assert setup["status"] == "pass", _outputs(run_dir, setup["id"])
    assert _writes(run_dir, setup["id"]) == {
        ("planted", "deleted"), ("/home/agent/planted", "deleted"),
        ("/tmp/planted", "deleted"), ("/dev/shm/planted", "deleted"), ("b.txt", "created")}
