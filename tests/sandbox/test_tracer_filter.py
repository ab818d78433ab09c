"""A box's tracer carries its commands' seccomp filter itself (spawner.c, tracer_main:
filter_self): each traced command's first process, a clone of the tracer, has it from its
clone on and compiles none of its own. A tracer's filter is one variant (with capture or
without), so a trial's commands get a tracer of their own variant; and since the top has the
filter before its exec, its own setup (its descriptors put onto 0-2) must leave nothing in
the trace: a trace shows the agent's processes from their first exec, under both variants.
Against a real box, through the spawner's own requests."""

from __future__ import annotations

from proctor.sandbox.trace import parse_trace
from tests.sandbox.test_trial_tracer import _traced, _tracers

CAPTURE = (1000, 16000)


def _seccomp(pid: int | str) -> tuple[str, str]:
    """(Seccomp mode, number of filters) of a process, from its /proc status."""
    with open(f"/proc/{pid}/status") as f:
        status = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    return status["Seccomp"], status["Seccomp_filters"]


def _lines(path) -> list[list[str]]:
    return [line.split(" ", 3) for line in path.read_text().splitlines()]


async def test_a_tracer_carries_the_filter_its_commands_have_without_a_second(box, tmp_path):
    # Counted from the spawner's own (none, unless proctor itself runs under a filter).
    above = int(_seccomp(box.spawner_pid)[1])
    await box.spawner.new_trial()
    for capture in (None, CAPTURE):
        res = await _traced(box, "grep Seccomp /proc/self/status", tmp_path / "t",
                            capture=capture)
        assert res.exit_code == 0, res.stderr
        # The agent's process has the one filter, the tracer's (not one more of its own).
        assert res.stdout.split() == ["Seccomp:", "2", "Seccomp_filters:", str(above + 1)]
    tracers = _tracers(box.spawner_pid)
    assert len(tracers) == 2  # one of each variant, both idle now
    assert {_seccomp(pid) for pid in tracers} == {("2", str(above + 1))}


async def test_a_trace_shows_nothing_of_the_tops_setup_under_either_variant(box, tmp_path):
    """The top's first line after S is its exec, with or without capture: its dups onto 0-2
    (which the capture filter stops at) are not made where the filter sees them."""
    await box.spawner.new_trial()
    for n, capture in enumerate([CAPTURE, None, CAPTURE, None]):
        path = tmp_path / f"t{n}"
        res = await _traced(box, "echo out; echo err >&2", path, capture=capture)
        assert (res.exit_code, res.stdout, res.stderr) == (0, "out\n", "err\n")
        lines = _lines(path)
        assert lines[0][0] == "S"
        top = lines[0][1]
        assert lines[1][:2] == ["E", top], lines
        assert lines[2][:2] == ["P", top], lines
        kinds = [line[0] for line in lines]
        if capture:  # the agent's own: its writes, and the shell's dups for `>&2`
            assert lines[3][:2] == ["O", top], lines
            writes = [line[1:3] for line in lines if line[0] == "W"]
            assert writes == [[top, "1"], [top, "1"]], lines  # `>&2`: fd 1 made a copy of 2
            assert "D" in kinds
            assert path.read_text().count('"out\\u000a"') == 1
            assert path.read_text().count('"err\\u000a"') == 1
        else:  # nothing but the programs
            assert not {"O", "W", "D"} & set(kinds), lines
        assert kinds[-2:] == ["X", "Z"], lines


async def test_a_command_and_its_tracers_variant_always_match(box, tmp_path):
    """Commands with and without capture, one after another in a trial: each is traced with
    its own variant (a plain command given a capturing tracer would be captured; the tracer
    refuses one that does not match rather than trace it wrong)."""
    await box.spawner.new_trial()
    seen: dict[bool, set[int]] = {True: set(), False: set()}
    for n, capture in enumerate([None, CAPTURE, CAPTURE, None, None, CAPTURE]):
        path = tmp_path / f"t{n}"
        res = await _traced(box, "echo hello", path, capture=capture)
        assert (res.exit_code, res.stdout) == (0, "hello\n"), res.stderr
        kinds = {line[0] for line in _lines(path)}
        assert ("W" in kinds) == (capture is not None), path.read_text()
        seen[capture is not None] |= _tracers(box.spawner_pid)
    assert seen[True] and seen[False]


async def test_a_tracers_own_calls_pass_its_filter(box, tmp_path):
    """The tracer runs under the filter its commands get: a whole, complete trace of a tree
    with forks, execs, and writes to fd 1 and 2 (the tracer's own output, its trace file and
    its report, are not fd 1 or 2), trial after trial."""
    for trial in range(2):
        await box.spawner.new_trial()
        path = tmp_path / f"t{trial}"
        res = await _traced(box, "sh -c 'echo a; ls / >/dev/null' 2>&1 | cat", path,
                            capture=CAPTURE)
        assert (res.exit_code, res.stdout) == (0, "a\n"), res.stderr
        trace = parse_trace(path)
        assert trace.finished, path.read_text()
        names = [p.argv[0] for p in trace.programs]
        assert names[0] == "/bin/sh" and {"ls", "cat"} <= set(names), names
        assert '"a\\u000a"' in path.read_text()  # the inner echo's write, captured
