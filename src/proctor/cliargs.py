"""What the command line's values become: a `run`'s RunOptions (its options over proctor.toml),
a list of report formats, a run named by reference, and --otlp-endpoint and --retry-errors
checked (a bad one exits 2 with one line).

`proctor run`'s options are declared here once (`RUN_OPTIONS`, without click): cli.py makes
click's options of them, and `sure_run` reads with them, without importing click, a plain
`proctor run` command line exactly as click would (anything else is left to click).

Imported by cli.py's command bodies, and by the `proctor` program's start for `sure_run`;
what each function needs it imports itself, so a command imports only what it uses.
"""

from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING, Any

from proctor.agents import AGENTS
from proctor.sandbox import BACKENDS

if TYPE_CHECKING:
    from proctor.model import RunOptions

# `proctor run`'s options, in their --help order: each its option names, then its parameter's
# name (what `run` is given), then what click.option is given, but `type` said without click
# (`click_type` makes it): ("choice", NAMES) with NAMES one of CHOICES' or a tuple;
# ("int", MIN, MAX) a whole number in [MIN, MAX] (MAX None: no bound); ("float>0",) a number
# above 0; ("dir",) a path that is not a file; ("file",) a path that is not a directory.
# The trials: agents, models, tasks, repeats; then how and where they run, what is written.
RUN_OPTIONS: tuple[tuple[tuple[str, ...], str, dict[str, Any]], ...] = (
    (("--agent",), "agents", dict(
        type=("choice", "agents"), multiple=True,
        help="Override every task's agent; repeatable: the run is agent × model × help mode "
             "× task (default: proctor.toml's `agents`). oracle runs each task's solution; "
             "nop runs nothing; claude-code, codex and mini-swe-agent are installed on first "
             "use and take --model like llm.")),
    (("--agent-command",), "agent_command", dict(
        metavar="CMD",
        help="The program the command agent runs, e.g. 'my-agent --task {{prompt}}' "
             "(default: the scenario's agent.command).")),
    (("--model",), "models", dict(
        multiple=True, metavar="PROVIDER/MODEL",
        help="Model(s) to run (repeatable); overrides the spec's providers.")),
    (("--task",), "tasks", dict(
        multiple=True, metavar="ID", help="Only these task ids (repeatable).")),
    (("--category",), "categories", dict(
        multiple=True, metavar="NAME", help="Only tasks in these categories (repeatable).")),
    (("--repeat",), "repeat", dict(
        type=("int", 1, 100), help="Trials per task and model (overrides the spec).")),
    (("--concurrency",), "concurrency", dict(
        type=("int", 1, 1024), help="Trials at once (default: the spec's, else 3).")),
    (("--output-dir",), "output_dir", dict(
        type=("dir",),
        help="Write the run here (this directory becomes the run directory).")),
    (("--format",), "formats", dict(
        multiple=True, metavar="FMT[,FMT]",
        help="Reports to write: json,junit,md,html, and the exports atif,inspect,otel "
             "(json is always written).")),
    (("--backend",), "backend", dict(
        type=("choice", "backends"),
        help="Where trials run: this machine (local) or a container per trial (docker). "
             "Default: proctor.toml's `backend`, else local.")),
    (("--isolation",), "isolation", dict(
        type=("choice", ("auto", "namespaces", "none")), default="auto", show_default=True,
        help="Isolate each trial (namespaces: private files, processes, network, limits). "
             "auto exits 2 if that cannot be built here; none runs unisolated and every "
             "report says so. See docs/security.md.")),
    (("--executor",), "executor", dict(
        type=("choice", "executors"), default="local", show_default=True,
        help="Run trials in this process, or on a Ray cluster.")),
    (("--ray-address",), "ray_address", dict(
        metavar="ADDR",
        help="Ray cluster for --executor ray (host:port, ray://host:10001, auto); default: "
             "proctor.toml [ray] address, else $RAY_ADDRESS, else a private local instance.")),
    (("--keep",), "keep", dict(
        is_flag=True,
        help="Keep each trial's sandbox (workdir, HOME, TMPDIR) under RUN_DIR/workdirs/.")),
    (("--output-limit",), "output_limit", dict(
        type=("int", 1_000, None), metavar="BYTES",
        help="Bytes of stdout and of stderr kept per command (default 1000000); the rest is "
             "counted and dropped.")),
    (("--max-cost",), "max_cost", dict(
        type=("float>0",), metavar="USD",
        help="The run's budget: once its recorded cost reaches USD no new trial starts "
             "(started ones finish); the rest are listed as not run, exit 1, and --resume "
             "with a larger budget runs them. Default: proctor.toml's max_cost.")),
    (("--otlp-endpoint",), "otlp_endpoint", dict(
        metavar="URL",
        help="Send each trial's OpenTelemetry spans to this OTLP/HTTP receiver as it "
             "finishes (POST URL/v1/traces), e.g. http://localhost:4318 (a Collector, "
             "Jaeger) or http://localhost:6006 (Phoenix). A receiver that fails is a "
             "warning, never a failed run. Default: proctor.toml's otlp_endpoint. See "
             "docs/reports.md.")),
    (("--quiet", "-q"), "quiet", dict(is_flag=True, help="No progress bar or table.")),
    (("--config",), "config_path", dict(
        type=("file",), help="proctor.toml to read (default: ./proctor.toml if present).")),
    (("--resume",), "resume", dict(
        metavar="RUN",
        help="Finish an interrupted run (its directory, id, id prefix or `latest`): only "
             "trials missing from it are run.")),
    (("--retry-errors",), "retry_errors", dict(
        metavar="KIND[,KIND]",
        help="With --resume: also re-run the run's `error` trials of these kinds (infra, "
             "provider, check), each replacing its result.")),
)


def choices(names: str | tuple[str, ...]) -> list[str]:
    """A choice option's values: a registry's names ("agents", "backends", "executors")."""
    if isinstance(names, tuple):
        return list(names)
    if names == "executors":
        from proctor.executors import EXECUTORS

        return EXECUTORS.names()
    return AGENTS.names() if names == "agents" else BACKENDS.names()


def click_type(spec: tuple[Any, ...] | None) -> Any:
    """The click type of a RUN_OPTIONS `type` (None: a string)."""
    import click

    if spec is None:
        return None
    kind = spec[0]
    if kind == "choice":
        return click.Choice(choices(spec[1]))
    if kind == "int":
        return click.IntRange(spec[1], spec[2])
    if kind == "float>0":
        return click.FloatRange(min=0, min_open=True)
    return click.Path(file_okay=kind != "dir", dir_okay=kind != "file")


_WHOLE = re.compile(r"[1-9][0-9]{0,9}")
_DECIMAL = re.compile(r"[0-9]{1,12}(\.[0-9]{1,12})?")


def sure_run(argv: list[str]) -> tuple[tuple[str, ...], dict[str, Any]] | None:
    """`proctor run`'s PATHS and options as click gives them to cli.py's `run`, read from the
    program's `argv` without click; or None for any command line it is not sure of: another
    command, help, an option it does not know or given unusually (`--`, a value that starts
    with `-` or is empty, a number not plainly written), a value click would refuse (or
    might), shell completion. Those go to click, unchanged (tests/test_cli_quick.py: the
    same result as click's for many command lines)."""
    if len(argv) < 2 or argv[1] != "run" or any(
            k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ):
        return None
    known: dict[str, tuple[str, dict[str, Any]]] = {}
    values: dict[str, Any] = {}
    for names, dest, spec in RUN_OPTIONS:
        known.update((name, (dest, spec)) for name in names)
        values[dest] = (() if spec.get("multiple") else False if spec.get("is_flag")
                        else spec.get("default"))
    paths: list[str] = []
    args = iter(argv[2:])
    for arg in args:
        if not arg.startswith("-"):
            if not _path_ok(arg, ("any",)):
                return None
            paths.append(arg)
            continue
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name not in known:
            return None  # `--`, `-`, help, an unknown option, short options run together
        dest, spec = known[name]
        if spec.get("is_flag"):
            if eq:
                return None
            values[dest] = True
            continue
        if not eq:
            value = next(args, "")
        converted = _value(spec.get("type"), value)
        if converted is None:
            return None
        values[dest] = (*values[dest], converted) if spec.get("multiple") else converted
    if _formats(values["formats"])[1] is not None:
        return None  # click's usage error (`formats`)
    return tuple(paths), values


def _value(spec: tuple[Any, ...] | None, value: str) -> Any:
    """A RUN_OPTIONS value as click converts it, or None if click might refuse it."""
    if not value or value.startswith("-"):
        return None
    if spec is None:
        return value
    kind = spec[0]
    if kind == "choice":
        return value if value in choices(spec[1]) else None
    if kind == "int":
        if not _WHOLE.fullmatch(value):
            return None
        number = int(value)
        return number if spec[1] <= number and (spec[2] is None or number <= spec[2]) else None
    if kind == "float>0":
        return float(value) if _DECIMAL.fullmatch(value) and float(value) > 0 else None
    return value if _path_ok(value, spec) else None


def _path_ok(value: str, spec: tuple[Any, ...]) -> bool:
    """Whether click's Path (not required to exist) takes `value` as it is: absent, or not a
    file for ("dir",), not a directory for ("file",), and readable."""
    try:
        st = os.stat(value)
    except (OSError, ValueError):
        return not value.startswith("-") and "\x00" not in value
    if (spec[0] == "dir" and stat.S_ISREG(st.st_mode)) or \
            (spec[0] == "file" and stat.S_ISDIR(st.st_mode)):
        return False
    return os.access(value, os.R_OK)


def formats(values: tuple[str, ...]) -> list[str]:
    """--format FMT[,FMT] (repeatable): the formats named, each known (a usage error if not)."""
    out, bad = _formats(values)
    if bad is not None:
        import click

        raise click.BadParameter(bad)
    return out


def _formats(values: tuple[str, ...]) -> tuple[list[str], str | None]:
    """The formats named, or what is wrong with them."""
    from proctor.report import FORMATS

    out: list[str] = []
    for v in values:
        for f in v.split(","):
            f = f.strip()
            if not f:
                continue
            if f not in FORMATS:
                return out, f"unknown format {f!r} (valid: {', '.join(FORMATS)})"
            out.append(f)
    return out, None


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
