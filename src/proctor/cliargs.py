"""What the command line's values become: a `run`'s RunOptions (its options over proctor.toml),
a list of report formats, a run named by reference, and --otlp-endpoint and --retry-errors
checked (a bad one exits 2 with one line).

Imported by cli.py's command bodies only, when a command runs (not for `proctor --help`); what
each function needs it imports itself, so a command imports only what it uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from proctor.agents import AGENTS
from proctor.sandbox import BACKENDS

if TYPE_CHECKING:
    from proctor.model import RunOptions


def formats(values: tuple[str, ...]) -> list[str]:
    """--format FMT[,FMT] (repeatable): the formats named, each known (a usage error if not)."""
    from proctor.report import FORMATS

    out: list[str] = []
    for v in values:
        for f in v.split(","):
            f = f.strip()
            if not f:
                continue
            if f not in FORMATS:
                raise click.BadParameter(f"unknown format {f!r} (valid: {', '.join(FORMATS)})")
            out.append(f)
    return out


def run_dir(ref: str | None) -> str:
    """A run named by its directory, id, id prefix or `latest` (None): its directory."""
    from proctor.store import resolve_run

    return str(resolve_run(ref))


def run_options(**kw: Any) -> RunOptions:
    """`proctor run`'s options (cli.py's names), over proctor.toml's (`config_path`)."""
    from proctor.config import load_config
    from proctor.model import RunOptions

    config = load_config(kw.get("config_path"), backends=BACKENDS.names(),
                         agents=AGENTS.names())
    agents = list(dict.fromkeys(kw.get("agents") or config.agents))
    return RunOptions(
        agent=agents[0] if agents else None,
        agents=agents,
        agent_command=kw.get("agent_command"),
        models=list(kw.get("models") or ()),
        tasks=list(kw.get("tasks") or ()),
        categories=list(kw.get("categories") or ()),
        repeat=kw.get("repeat"),
        concurrency=kw.get("concurrency"),
        output_dir=kw.get("output_dir"),
        formats=formats(kw.get("formats") or ()) or ["json"],
        resume=kw.get("resume"),
        backend=kw.get("backend") or config.backend or "local",
        backend_chosen=bool(kw.get("backend") or config.backend),
        isolation=kw.get("isolation") or "auto",
        executor=kw.get("executor") or "local",
        ray_address=kw.get("ray_address"),
        keep=bool(kw.get("keep")),
        **({"output_limit": kw["output_limit"]} if kw.get("output_limit") else {}),
        quiet=bool(kw.get("quiet")),
        config=config,
        max_cost=kw.get("max_cost") or config.max_cost,
        retry_errors=error_kinds(kw.get("retry_errors"), kw.get("resume")),
        otlp_endpoint=otlp_endpoint(kw.get("otlp_endpoint") or config.otlp_endpoint),
    )


def otlp_endpoint(url: str | None) -> str | None:
    """--otlp-endpoint: an http(s) URL with a host (exit 2 otherwise)."""
    from proctor.config import otlp_endpoint_problem
    from proctor.errors import UsageError

    if url is not None and (problem := otlp_endpoint_problem(url)):
        raise UsageError(f"--otlp-endpoint: {problem}")
    return url


def error_kinds(value: str | None, resume: str | None) -> list[str]:
    """--retry-errors KIND[,KIND]: known kinds, and only with --resume (exit 2 otherwise)."""
    from proctor.errors import UsageError

    if not value:
        return []
    kinds = [k.strip() for k in value.split(",") if k.strip()]
    known = ("infra", "provider", "check")
    if bad := [k for k in kinds if k not in known]:
        raise UsageError(f"--retry-errors: unknown error kind {bad[0]!r} (known: "
                         f"{', '.join(known)})")
    if not resume:
        raise UsageError("--retry-errors re-runs a stored run's errors: give --resume RUN_DIR")
    return list(dict.fromkeys(kinds))
