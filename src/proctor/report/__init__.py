"""Everything that turns a finished run's data into things people read.

* `write_reports(run_dir, results, formats)`: results.json, junit.xml, summary.md, report.html
* `report_main(run_dir, formats)`: `proctor report`; `export_main`: `proctor export` (ATIF
  trajectories, an Inspect log: `atif`, `inspect_log`)
* `terminal.print_summary(results, console)`: the tables at the end of `proctor run`
* `show.show_main(run_dir, trial)`: `proctor show`
* `view.view_main(runs_dir)`: `proctor view`, a local web server over the runs
* `runs.runs_main()`: `proctor runs`, the run index
* `compare.compare_main(...)`: `proctor compare`, pass rates of two runs (or of a run's
  agents) beyond chance
* `trajectory` (with `wire`): what each agent did, compressed into report.html
* `tables` (terminal tables that fit), `labels` (names cut yet distinct, a message's gist),
  `charts` (report.html's SVG)

Renderers are pure functions of the results dict (plus run.json for page headers); nothing here
runs trials or changes verdicts."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from proctor.registry import Registry
from proctor.report.collector import collector_paused
from proctor.results import RunResults

# A report format = a module with `render_X(results, run, run_dir) -> str`, a line here and
# its file in FILES; or an export, which writes files of its own:
# `write_X(run_dir, results, run, out) -> [paths]`, a line here and its place in EXPORTS.
# Each entry is a render_X or a write_X (their signatures differ: see above).
FORMATS: Registry[Callable[..., Any]] = Registry("report format", {
    "json": "proctor.report:render_json",
    "junit": "proctor.report.junit:render_junit",
    "md": "proctor.report.markdown:render_markdown",
    "html": "proctor.report.html:render_html",
    "atif": "proctor.report.atif:write_atif",
    "inspect": "proctor.report.inspect_log:write_inspect",
    "otel": "proctor.report.otel:write_otel",
})
FILES = {"json": "results.json", "junit": "junit.xml", "md": "summary.md", "html": "report.html"}
EXPORTS = {"atif": "trials/TRIAL/trajectory.json", "inspect": "inspect.eval", "otel": "otel.json"}
NAMES = (*FILES, *EXPORTS)
_STEPPED = ("atif", "inspect")  # exports that count their trials as progress (`progress=`)


def render_json(results: RunResults, run: Mapping[str, Any] | None = None,
                run_dir: Path | None = None) -> str:
    shown = {k: v for k, v in results.items() if not k.startswith("_")}  # no reader caches
    return json.dumps(shown, indent=2, ensure_ascii=False, default=str) + "\n"


def render(fmt: str, results: RunResults, run: Mapping[str, Any] | None = None,
           run_dir: Path | None = None) -> str:
    """The text of one report format; `run_dir` lets a format read the trial directories
    (report.html embeds each trial's trajectory)."""
    if fmt not in FILES:
        raise ValueError(f"unknown report format {fmt!r} (valid: {', '.join(FILES)})")
    with collector_paused():
        text: str = FORMATS.get(fmt)(results, run, run_dir)
        return text


# Formats whose renderer also gives its text in pieces (`render_X_pieces`): written piece by
# piece, a large page is never one string (nor one encoded copy of it).
PIECES: Registry[Callable[..., list[str]]] = Registry("report format in pieces", {
    "html": "proctor.report.html:render_html_pieces",
})


def _pieces(fmt: str, results: RunResults, run: Mapping[str, Any] | None,
            run_dir: Path | None) -> list[str]:
    if fmt not in PIECES.names():
        return [render(fmt, results, run, run_dir)]
    with collector_paused():
        return PIECES.get(fmt)(results, run, run_dir)


WRITE_BUFFER = 1 << 20


def _write_atomic(path: Path, text: str | list[str]) -> None:
    # A reader (CI uploading artifacts, a second `proctor report`) never sees half a file.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    # A large buffer: a 25 MB page of small pieces is then ~25 writes, not thousands.
    with open(tmp, "wb", buffering=WRITE_BUFFER) as f:
        for piece in [text] if isinstance(text, str) else text:
            f.write(piece.encode("utf-8"))
    os.replace(tmp, path)


def _run_config(run_dir: Path) -> dict[str, Any]:
    try:
        cfg = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return cfg if isinstance(cfg, dict) else {}


def write_reports(run_dir: Path, results: RunResults, formats: list[str],
                  out: Path | None = None, progress: Any = None) -> list[Path]:
    """Write each asked format into `run_dir` (json rewrites results.json; an export writes
    its files, under `out` when given, each trial a step of `progress`, an
    activity.Activity); return the paths, in the order asked."""
    run_dir = Path(run_dir)
    run = _run_config(run_dir)
    paths: list[Path] = []
    for fmt in dict.fromkeys(formats):
        if fmt in EXPORTS:
            kw = {"progress": progress} if fmt in _STEPPED else {}
            paths += FORMATS.get(fmt)(run_dir, results, run, out, **kw)
            continue
        if fmt not in FILES:
            raise ValueError(f"unknown report format {fmt!r} (valid: {', '.join(NAMES)})")
        path = run_dir / FILES[fmt]
        _write_atomic(path, _pieces(fmt, results, run, run_dir))
        paths.append(path)
    return paths


def _print_written(paths: list[Path]) -> None:
    """Each path; many trajectory.json files as one line."""
    many = [p for p in paths if p.name == "trajectory.json"]
    for p in paths:
        if p.name != "trajectory.json" or len(many) <= 3:
            print(p)
    if len(many) > 3:
        print(f"{many[0].parent.parent}/*/trajectory.json ({len(many)} trajectories)")


def report_main(run_dir: str | Path, formats: list[str]) -> int:
    """`proctor report RUN_DIR [--format ...]`: with formats, write them and print their paths;
    without, print the markdown summary to stdout (pipe it into $GITHUB_STEP_SUMMARY)."""
    from proctor.report.data import load_run

    run = load_run(run_dir)
    if formats:
        _print_written(write_reports(run.dir, run.results, formats))
        return 0
    from proctor.report.markdown import render_markdown

    sys.stdout.write(render_markdown(run.results, run.config))
    return 0


def export_main(run_dir: str | Path, fmt: str, out: str | None = None,
                otlp_endpoint: str | None = None) -> int:
    """`proctor export RUN_DIR --format atif|inspect|otel [--output PATH]
    [--otlp-endpoint URL]` (otel: sent, and written only where --output says): the paths on
    stdout, the progress over the trials on stderr."""
    from proctor.activity import Activity
    from proctor.report.data import load_run

    run = load_run(run_dir)
    if otlp_endpoint is not None:
        from proctor.report.otlp import export_to

        export_to(run.dir, run.results, run.config, otlp_endpoint)
        if out is None:
            return 0
    if fmt == "inspect" and out:  # a bad path is said before any progress
        from proctor.report.inspect_log import check_path

        check_path(Path(out))
    trials = len(run.results.get("trials") or [])
    as_ = _AS.get(fmt, fmt)
    with Activity(f"exporting {run.dir.name} as {as_}", trials if fmt in _STEPPED else None,
                  unit="trials") as progress:
        paths = write_reports(run.dir, run.results, [fmt], Path(out) if out else None, progress)
        progress.close(f"exported {trials} trial(s) as {as_}")
    _print_written(paths)
    return 0


_AS = {"atif": "ATIF trajectories", "inspect": "an Inspect log", "otel": "OTLP/JSON"}
