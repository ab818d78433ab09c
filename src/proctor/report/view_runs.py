"""The runs `proctor view` shows, as typed rows: from the run index (`proctor runs`) or, for a
run directory the index does not know, from its run.json and results.json.

A run belongs to a suite: its spec files, resolved (run.json's `suite`, inputs.suite_identity:
`.`, `cli-bench.yaml` and `suite/` typed anywhere are one suite), in a version (their content
and the task selection). Each run has one `Line` per agent under test — the agent (`llm`,
`claude-code`, `oracle`, …) and its model apart — so a trend follows one agent on one
model and never mixes two. Rows indexed before suites and agents were recorded keep what
they have: their spec paths as typed, one line per model."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from proctor.errors import UsageError
from proctor.store import by_agent, read_results, read_run_meta


@dataclass(frozen=True)
class Line:
    """One agent under test in one run."""

    label: str  # results.json's models[].agent: "mock/solver", "claude-code:mock/solver"
    agent: str  # llm, claude-code, oracle, command:PROGRAM, … ("?" for an old index row)
    model: str | None
    passed: int
    trials: int
    errored: int = 0

    @property
    def rate(self) -> float:
        return self.passed / self.trials if self.trials else 0.0

    @property
    def title(self) -> str:
        """`claude-code · anthropic/claude-sonnet-4-5`, `llm · mock/solver`, `oracle`."""
        if self.agent == "?":
            return self.label
        return f"{self.agent} · {self.model}" if self.model else self.agent


@dataclass
class RunRow:
    """One run in `proctor view`'s list of runs."""
    run_id: str
    dir: str
    started_at: str = ""
    status: str = ""  # the index's: running, passed, failed, interrupted; or unfinished
    trials: int | None = None
    passed: int = 0
    failed: int = 0
    errored: int = 0
    pass_rate: float | None = None
    specs: list[str] = field(default_factory=list)
    suite_key: str = ""
    suite_version: str = ""
    suite_name: str = ""
    lines: list[Line] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        """What a person filters on: passed, failed (some trial failed), errored (some
        trial errored: the infrastructure or a provider, not the agent), or the state of a
        run that has not finished."""
        if self.status in ("running", "interrupted", "unfinished") or self.trials is None:
            return self.status or "unfinished"
        if self.errored:
            return "errored"
        return "failed" if self.failed or self.passed < (self.trials or 0) else "passed"

    @property
    def when(self) -> datetime | None:
        try:
            return datetime.fromisoformat(self.started_at)
        except ValueError:
            return None

    @property
    def gone(self) -> bool:
        return not Path(self.dir).is_dir()


def legacy_key(specs: list[str]) -> str:
    """A suite as rows from before suites were recorded name it: the spec paths as typed."""
    return hashlib.sha256(json.dumps(sorted(specs)).encode()).hexdigest()[:12]


def _json(text: Any, default: Any) -> Any:
    try:
        value = json.loads(text) if text else default
    except (TypeError, ValueError):
        return default
    return value if isinstance(value, type(default)) else default


def _lines(agents: dict[str, Any], old: dict[str, Any], row: Mapping[str, Any]) -> list[Line]:
    out = [Line(str(label), str(v.get("agent") or "?"), v.get("model"), int(v.get("passed") or 0),
                int(v.get("trials") or 0), int(v.get("errored") or 0))
           for label, v in agents.items() if isinstance(v, dict)]
    if out:
        return out
    out = [Line(str(k), "?", None, int(v[0]), int(v[1])) for k, v in old.items()
           if isinstance(v, list) and len(v) == 2]
    if out or not row.get("trials"):
        return out
    # an index entry from before per-model counts: the run as a whole
    return [Line("(all models)", "?", None, int(row.get("passed") or 0), int(row["trials"]))]


def from_index(row: Mapping[str, Any]) -> RunRow:
    specs = [str(s) for s in _json(row.get("specs"), [])]
    return RunRow(
        run_id=str(row["run_id"]), dir=str(row["dir"]), started_at=str(row.get("started_at") or ""),
        status=str(row.get("status") or ""), trials=row.get("trials"),
        passed=int(row.get("passed") or 0), failed=int(row.get("failed") or 0),
        errored=int(row.get("errored") or 0), pass_rate=row.get("pass_rate"), specs=specs,
        suite_key=str(row.get("suite_key") or legacy_key(specs)),
        suite_version=str(row.get("suite_version") or ""),
        suite_name=str(row.get("suite_name") or _names(specs)),
        lines=_lines(_json(row.get("by_agent"), {}), _json(row.get("by_model"), {}), row))


def _names(specs: list[str]) -> str:
    return ", ".join(Path(s).name or s for s in specs) or "(no specs)"


def from_disk(run_dir: Path) -> RunRow | None:
    """A row for a run directory the index does not know (CI artifacts); None when it is not
    a run, or is `proctor check`'s."""
    try:
        meta = read_run_meta(run_dir / "run.json")
    except UsageError:
        return None
    run_id = meta.get("run_id")
    if not run_id or meta.get("purpose") == "check":
        return None
    suite: Mapping[str, Any] = meta.get("suite") or {}
    specs = [str(s) for s in meta.get("paths") or []]
    row = RunRow(run_id=run_id, dir=str(run_dir),
                 started_at=str(meta.get("started_at") or ""), status="unfinished",
                 specs=specs, suite_key=str(suite.get("key") or legacy_key(specs)),
                 suite_version=str(suite.get("version") or ""),
                 suite_name=str(suite.get("name") or _names(specs)))
    if (run_dir / "results.json").is_file():
        try:
            res = read_results(run_dir / "results.json")
        except UsageError:
            return row
        row.status = "interrupted" if res.get("interrupted") else (
            "passed" if res.get("exit_code") == 0 else "failed")
        if (s := res.get("summary")) is not None:
            row.trials, row.pass_rate = s["trials"], s["pass_rate"]
            row.passed, row.failed, row.errored = s["passed"], s["failed"], s["errored"]
        row.lines = _lines(by_agent(res.get("models") or []), {}, {})
    return row
