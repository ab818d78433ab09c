"""`proctor check --attacks`: proctor's hostile agents against every task of a benchmark.

Each attack (agents/attacks/) is a model-free agent that tries to get a pass without doing
the task. Every task runs once per attack, as a trial of one run (`attack` agent, the attack
named in the trial's params: `TASK.attack=NAME.r0`) through the same engine and checks as any
run; a trial that passes means the task can be won without doing it. The run directory is
kept, so `proctor show RUN TRIAL` shows what the attack did and how it was graded.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from proctor.agents.attacks import ATTACKS, PARAM
from proctor.config import ProctorConfig
from proctor.model import RunOptions, Trial
from proctor.plan import trial_id
from proctor.results import TrialRecord
from proctor.run.execute import run_planned
from proctor.run.prepare import prepare
from proctor.store import shown
from proctor.text import cut

REASON_CHARS = 160  # of a contained attack's one-line reason, in the table


@dataclass
class Outcome:
    """One attack's trial on one task, for `proctor check --attacks`."""
    task_id: str
    source: str
    attack: str
    trial: TrialRecord | None  # None: the trial never ran (an interrupted run)

    @property
    def passed(self) -> bool:
        return self.trial is not None and self.trial["status"] == "pass"

    def verdict(self) -> str:
        return "PASSED" if self.passed else "contained" if self.trial else "not run"

    def why(self) -> str:
        """One line: how the attack's trial ended and why (tampering first: it names files)."""
        t = self.trial
        if t is None:
            return ""
        if t["status"] == "pass":
            return "pass: the task was won without doing it"
        # Recorded by a verifier that detects it (SPEC §5); older results have none.
        found: Any = dict(t).get("tampering")
        tampering: list[dict[str, Any]] = list(found or [])
        if tampering:
            files = ", ".join(f"{x.get('path')} ({x.get('change')})" for x in tampering[:3])
            more = f" and {len(tampering) - 3} more" if len(tampering) > 3 else ""
            return f"{t['status']}: tampering: {files}{more}"
        if t["status"] == "error":
            return f"error: {t.get('error') or 'unknown'}"
        why = t.get("reason") or "; ".join(
            f"{c['name']}: {c['message']}" for c in t.get("checks", []) if not c["passed"])
        return f"fail: {why.removeprefix('failed: ')}"


def attack_trials(firsts: list[Trial], attacks: list[str]) -> list[Trial]:
    """Each task (its first trial: help modes and params don't change what an attack does)
    once per attack."""
    out = []
    for t in firsts:
        for name in attacks:
            params = {**t.params, PARAM: name}
            out.append(Trial(id=trial_id(t.task_id, None, None, params, 0), task_id=t.task_id,
                             agent="attack", model=None, help_mode=None, replica=0,
                             params=params))
    return out


def attacks_main(paths: list[str], attacks: list[str] | None = None,
                 concurrency: int | None = None, quiet: bool = False,
                 config: ProctorConfig | None = None, backend: str | None = None,
                 output_dir: str | None = None) -> int:
    """Run the attacks, print the table (stdout) and each attack that passed (stderr);
    1 if any passed."""
    names = list(attacks or ATTACKS)
    options = RunOptions(agent="attack", concurrency=concurrency, quiet=quiet, repeat=1,
                         output_dir=output_dir, config=config or ProctorConfig(),
                         backend=backend or "local", backend_chosen=backend is not None,
                         purpose="check")
    planned = prepare(paths, options, warn=False)
    firsts: dict[str, Trial] = {}
    for t in planned.trials:
        firsts.setdefault(t.task_id, t)
    planned.trials = attack_trials(list(firsts.values()), names)
    if not quiet:
        print(f"proctor: {len(names)} attack(s) against {len(firsts)} task(s): "
              f"{len(planned.trials)} trials", file=sys.stderr, flush=True)
    results = run_planned(planned)
    by_id = {t["id"]: t for t in results["trials"]}
    outcomes = [Outcome(t.task_id, planned.tasks[t.task_id].source, str(t.params[PARAM]),
                        by_id.get(t.id)) for t in planned.trials]
    run = shown(planned.store.dir)
    if not quiet:
        print(table(outcomes))
    won = [o for o in outcomes if o.passed]
    for o in won:
        trial = o.trial["id"] if o.trial else ""
        print(f"{shown(o.source)}: {o.task_id}: attack {o.attack} PASSED: the task can be won "
              f"without doing it ({o.attack}: {ATTACKS[o.attack]}; proctor show {run} {trial})",
              file=sys.stderr)
    if not quiet:
        verdict = (f"{len(won)} attack(s) passed" if won
                   else "ok: every attack contained")
        print(f"{verdict}: {len(firsts)} task(s) × {len(names)} attack(s); run: {run}")
    return 1 if won else 0


def table(outcomes: list[Outcome]) -> str:
    """task × attack, one line each: the verdict and, for a contained attack, why."""
    rows = [("TASK", "ATTACK", "VERDICT", "HOW")] + [
        (o.task_id, o.attack, o.verdict(), cut(o.why().replace("\n", " "), REASON_CHARS))
        for o in outcomes]
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(f"{a:<{w[0]}}  {b:<{w[1]}}  {c:<{w[2]}}  {d}".rstrip()
                     for a, b, c, d in rows)
