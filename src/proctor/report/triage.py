"""report.html's account of what went wrong, read first: errored trials grouped by cause,
failing checks grouped by task, agent · model and check, each with an example trial."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from proctor.report import data
from proctor.report.charts import e
from proctor.report.labels import gist
from proctor.results import RunResults

MAX_ERROR_GROUPS = 50  # error causes listed in the page; the rest are counted
KIND_TITLES = {"infra": "the sandbox, a service, the executor or proctor failed",
               "provider": "the model's API failed after its retries",
               "check": "a check or verifier itself errored"}


def errors(results: RunResults) -> str:
    """Errored trials grouped by cause, the most frequent first, each with where it
    happened and an example trial that opens in the table below. An error is proctor's
    or the infrastructure's (a provider down, a service that never started, a check that
    could not run), never the agent's failure: it is read apart from failing checks."""
    groups = data.error_groups(results)
    if not groups:
        return ""
    n = sum(len(g["trials"]) for g in groups)
    out = [f'<section id="errors"><h2>Errors <span class="muted">({n} errored '
           f'trial{"s" if n > 1 else ""}, {len(groups)} cause{"s" if len(groups) > 1 else ""})'
           '</span></h2><ul class="triage errors">']
    for g in groups[:MAX_ERROR_GROUPS]:
        trials = g["trials"]
        tid = data.clean(trials[0].get("id"))
        tasks = sorted(str(x) for x in g["tasks"])
        where = (f"task {tasks[0]}" if len(tasks) == 1 else f"{len(tasks)} tasks") + " · " + (
            ", ".join(sorted(g["models"])) if len(g["models"]) <= 3 else
            f"{len(g['models'])} models")
        kind = (f'<span class="kind" title="{e(KIND_TITLES.get(g["kind"], ""))}">'
                f'{e(g["kind"])}</span> ' if g.get("kind") else "")
        out.append(
            f'<li>{kind}<b>{len(trials)} trial{"s" if len(trials) > 1 else ""}</b>: '
            f'<span class="cause">{e(gist(g["cause"], 400))}</span> '
            f'<span class="muted">({e(where)}) e.g.</span> '
            f'<a href="#" data-show-trial="{e(tid)}"><code>{e(tid)}</code></a></li>')
    if len(groups) > MAX_ERROR_GROUPS:
        out.append(f'<li class="muted">… and {len(groups) - MAX_ERROR_GROUPS} more causes</li>')
    out.append("</ul></section>")
    return "".join(out)


MAX_GROUPS = 100  # failing-check groups listed in the page; the rest are counted


MAX_COMMANDS = 20  # failing-check groups that name their example's last command


def _last_command(run_dir: Path | None, trial_id: str) -> Mapping[str, Any] | None:
    """The example trial's last agent command (what `exit_code` and `output_*` judge, and
    the agent's last word otherwise), from its trace; None without one."""
    if run_dir is None:
        return None
    last = None
    for ev in data.read_jsonl(Path(run_dir) / "trials" / trial_id / "trace.jsonl"):
        if ev.get("type") == "command" and not ev.get("ignored"):
            last = ev
    return last


def triage(results: RunResults, run_dir: Path | None = None) -> str:
    """Failing checks grouped by task, agent · model and check, most frequent first; each
    names an example trial that opens in the table below and, from its trace, the last
    command the agent ran and how it ended."""
    groups = sorted(data.failure_groups(results), key=lambda g: -g["failed"])
    if not groups:
        return ""
    out = [f'<section id="failing"><h2>Failing checks <span class="muted">'
           f'({sum(g["failed"] for g in groups)} in {len(groups)} groups)</span></h2>'
           '<ul class="triage">']
    for i, g in enumerate(groups[:MAX_GROUPS]):
        t, c = g["trial"], g["check"]
        model = f' · {e(g["label"])}'
        gate = ", gate" if c.get("gate") else ""
        tid = data.clean(t.get("id"))
        cmd = _last_command(run_dir, str(t.get("id"))) if i < MAX_COMMANDS else None
        last = ""
        if cmd is not None:
            end = ("timed out" if cmd.get("timed_out") else f"exit {cmd.get('exit_code')}"
                   if cmd.get("exit_code") is not None else "did not end")
            last = (f'<br><span class="muted">last command:</span> <code class="last">'
                    f'{e(data.one_line(cmd.get("command"), 200))}</code> '
                    f'<span class="muted">({e(end)})</span>')
        out.append(
            f'<li><b>{e(g["task_label"])}</b>{model} · <code>{e(c.get("name"))}</code> '
            f'<span class="muted">({e(c.get("type"))}{gate})</span> failed in '
            f'<b>{g["failed"]} of {g["trials"]}</b> trials: '
            f'<span class="cause">{e(gist(c.get("message") or "failed", 400))}</span>'
            f' <span class="muted">e.g.</span> <a href="#" data-show-trial="{e(tid)}">'
            f'<code>{e(tid)}</code></a>{last}</li>')
    if len(groups) > MAX_GROUPS:
        out.append(f'<li class="muted">… and {len(groups) - MAX_GROUPS} more groups</li>')
    out.append("</ul></section>")
    return "".join(out)
