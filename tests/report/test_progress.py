"""Progress when stderr is not a terminal: a plain line every tenth of the run (or 10 s),
with done/total, pass/fail/error, elapsed and ETA — CI logs are never empty until the end."""

from __future__ import annotations

import io

from proctor.report.progress import Progress
from proctor.results import TrialRecord, new_trial


def result(i: int, status: str = "pass", model: str | None = "m1") -> TrialRecord:
    return new_trial(id=f"t{i}", task_id="t", model=model, help_mode=None, replica=i,
                     params={}, status=status, composite_score=1.0)


def test_lines_without_a_terminal():
    out = io.StringIO()
    p = Progress(20, 0, stream=out)
    for i in range(20):
        p.advance(result(i, "fail" if i == 3 else "pass", model="m1" if i % 2 else "m2"))
    p.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 10  # every 2 of 20 trials (a tenth), the last one included
    assert lines[-1].startswith("proctor: 20/20 trials · 19 pass 1 fail 0 error · ")
    # done/total, counts, elapsed and ETA first; the per-model counts last
    assert lines[-1].endswith(" elapsed · eta 0:00 · m2 10/10, m1 9/10")
    assert "elapsed · eta " in lines[0]


LONG = ["mock/models/anthropic-claude-sonnet-4-5-careful.yaml",
        "mock/models/anthropic-claude-sonnet-4-5-sloppy.yaml"]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_keeps_eta_and_counts_at_80_columns_with_long_model_names():
    import re

    out = Terminal()
    p = Progress(40, 0, stream=out, width=80)
    for i in range(30):
        p.advance(result(i, "fail" if i % 3 == 0 else "pass", model=LONG[i % 2]))
    p.bar.refresh()
    p.close()
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    lines = [line for line in screen.splitlines() if line.strip()]
    bar = next(line for line in reversed(lines) if line.startswith("running"))
    assert len(bar) <= 80 and "30/40 20 pass 10 fail 0 error" in bar and " eta " in bar
    models = lines[lines.index(bar) + 1]
    # each model distinct and readable, on its own line
    assert models.strip() == ("mock/models/an…-careful.yaml 10/15, "
                              "mock/models/an…5-sloppy.yaml 10/15")


def test_model_names_in_the_bar_are_never_markup():
    out = Terminal()
    p = Progress(4, 0, stream=out, width=120)
    for i, m in enumerate(["[bold]x[/bold]", "[link=http://e]y[/link]"] * 2):
        p.advance(result(i, model=m))
    p.bar.refresh()
    p.close()
    assert "[bold]x[/bold] 2/2" in out.getvalue() and "[link=http://e]y[/link]" in out.getvalue()


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


def test_elapsed_counts_from_the_run_start_its_builds_included():
    import time

    out = io.StringIO()
    p = Progress(2, 0, stream=out, since=time.monotonic() - 125)  # 125 s of image builds
    p.advance(result(0))
    p.advance(result(1))
    last = out.getvalue().splitlines()[-1]
    assert " · 2:05 elapsed · eta 0:00" in last or " · 2:06 elapsed · eta 0:00" in last, last


def test_image_builds_are_progress_lines_without_a_terminal():
    from proctor.sandbox.docker.build import Status

    out = io.StringIO()
    s = Status(3, stream=out)
    s.n = 2
    s.begin("web: proctor-task:abc from web/environment/Dockerfile")
    s.at("step 1/4 FROM x")  # a log gets the start, a line every 30 s, and the end
    s.end(False, 75.4)
    assert out.getvalue().splitlines() == [
        "proctor: building the image of task 2 of 3: web: proctor-task:abc from "
        "web/environment/Dockerfile",
        "proctor: task 2 of 3: image failed in 1:15: web: proctor-task:abc from "
        "web/environment/Dockerfile"]


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_an_activity_without_a_terminal_is_plain_lines():
    """activity.Activity (agent installs, exports): a line when it starts, per step (few
    steps: named; many: every tenth), one when it ends; nothing when quiet."""
    from proctor.activity import Activity

    out = io.StringIO()
    with Activity("installing x==1", 2, stream=out) as a:
        a.at("python -m venv")
        a.advance()
        a.at("pip install x==1")
        a.advance()
        a.close("installed x==1")
    assert out.getvalue().splitlines() == [
        "proctor: installing x==1 (2 steps)", "proctor: installing x==1: 1/2 python -m venv · 0:00",
        "proctor: installing x==1: 2/2 pip install x==1 · 0:00", "proctor: installed x==1 in 0:00"]
    out = io.StringIO()
    with Activity("exporting r", 100, unit="trials", stream=out) as a:
        for _ in range(100):
            a.advance()
    lines = out.getvalue().splitlines()
    assert lines[0] == "proctor: exporting r (100 trials)" and len(lines) == 11
    assert lines[-1] == "proctor: exporting r: 100/100 trials · 0:00"
    out = io.StringIO()
    with Activity("quiet", 3, stream=out, quiet=True) as a:
        a.at("step")
        a.advance()
        a.close("done")
    assert out.getvalue() == ""


def test_an_activity_on_a_terminal_is_a_live_line():
    from proctor.activity import Activity

    out = _Tty()
    with Activity("installing [bold]x", 2, stream=out) as a:
        a.at("npm install x@1")
        a.advance()
        a.close("installed x")
    text = out.getvalue()
    assert "\x1b[" in text and "installing [bold]x" in text  # drawn by rich, names not markup
    assert text.rstrip().endswith("proctor: installed x in 0:00")
