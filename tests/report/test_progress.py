"""Progress when stderr is not a terminal: a plain line every tenth of the run (or 10 s),
with done/total, pass/fail/error, elapsed and ETA — CI logs are never empty until the end."""

from __future__ import annotations

import io

from proctor.model import TrialResult
from proctor.report.progress import Progress


def result(i: int, status: str = "pass", model: str | None = "m1") -> TrialResult:
    return TrialResult(id=f"t{i}", task_id="t", model=model, help_mode=None, replica=i,
                       params={}, status=status, composite_score=1.0)


def test_lines_without_a_terminal():
    out = io.StringIO()
    p = Progress(20, 0, stream=out)
    for i in range(20):
        p.advance(result(i, "fail" if i == 3 else "pass", model="m1" if i % 2 else "m2"))
    p.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 10  # every 2 of 20 trials (a tenth), the last one included
    assert lines[-1].startswith("proctor: 20/20 trials · 19 pass 1 fail 0 error (m2 10/10, m1 9/10)")
    assert "elapsed · eta " in lines[0]


def test_a_resumed_run_counts_from_where_it_was():
    out = io.StringIO()
    p = Progress(10, 6, stream=out)
    for i in range(4):
        p.advance(result(i))
    assert out.getvalue().splitlines()[-1].startswith("proctor: 10/10 trials · 4 pass")


def test_quiet_prints_nothing():
    out = io.StringIO()
    p = Progress(5, 0, quiet=True, stream=out)
    for i in range(5):
        p.advance(result(i))
    assert out.getvalue() == ""
