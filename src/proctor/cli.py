"""Command line. Thin on purpose: parse arguments, call one function, map errors to exit codes.

Everything heavy is imported inside the command that needs it, so `proctor --help` is instant.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from proctor import headstart
from proctor.sandbox import boxstart
from proctor.startup import begin, leave, release_gc, started_as_proctor

# First of all: a `proctor run --backend docker` whose first container is remembered has
# the engine make it now, beside the ~0.2 s of proctor's start-up (headstart.py), and a
# local run whose first boxes are remembered starts them now (boxstart.py); nothing for
# any other command line, nor when this module is imported by anything but the `proctor`
# program.
if started_as_proctor():
    headstart.begin(sys.argv)

begin()  # before click and the rest are imported: see proctor/startup.py
if started_as_proctor():  # with the collector held and generated code cached (startup.py)
    boxstart.begin(sys.argv)


def _guard(fn: Callable[[], int | None], collect: bool = True) -> None:
    """Run a command body: user errors become one line + exit code, Ctrl-C exits 130.
    `collect=False`: the body lets the garbage collector go itself (startup.release_gc: a
    run's trials), or is short and bounded (validate, show, runs) and never does."""
    from proctor.errors import ProctorError, SpecError

    if collect:
        release_gc()
    try:
        code = fn() or 0
    except SpecError as e:
        import click

        for issue in e.issues:
            click.echo(str(issue), err=True)
        code = e.exit_code
    except ProctorError as e:
        import click

        click.echo(f"proctor: {e}", err=True)
        code = e.exit_code
    except KeyboardInterrupt:
        import click

        click.echo("proctor: interrupted", err=True)
        code = 130
    sys.exit(code)


def _run(paths: tuple[str, ...], kw: dict[str, Any]) -> None:
    """`proctor run`'s body: PATHS and its options (cliargs.RUN_OPTIONS) as click gives them."""
    def body() -> int:
        boxstart.launch_made()  # on this thread: the boxes begun at start-up (boxstart.py)
        from proctor import cliargs
        from proctor.run.main import run_main

        cliargs.error_kinds(kw.get("retry_errors"), kw.get("resume"))  # before the run is looked up
        if kw.get("resume"):
            kw["resume"] = cliargs.run_dir(kw["resume"])
        return run_main(list(paths), cliargs.run_options(**kw))

    _guard(body, collect=False)  # from its trials on (run/execute.py)


def _run_without_click(argv: list[str]) -> None:
    """A `proctor run` command line that click would read as cliargs.sure_run reads it: the
    run made now and the program ended, without importing click (~10 ms of a run's start);
    any other command line: nothing (click reads it). What escapes the run's body (`_guard`)
    is handled by click's own `main`, as it would have been."""
    from proctor import cliargs

    sure = cliargs.sure_run(argv)
    if sure is None:
        return
    try:
        try:
            _run(*sure)
        except (Exception, KeyboardInterrupt) as e:
            _as_click_would(e)
    except SystemExit as e:
        leave(e.code)


def _as_click_would(exc: BaseException) -> None:
    """What escaped a command's body handled by click's `main` as it handles it (EOFError or
    KeyboardInterrupt: "Aborted!", exit 1; a broken pipe: exit 1; anything else raised)."""
    import click

    def escaped() -> None:
        raise exc
    click.Command("run", callback=escaped).main([], prog_name="proctor")


if started_as_proctor():  # a plain `proctor run`: made now, without click (returns if not)
    _run_without_click(sys.argv)


import click  # noqa: E402

from proctor.agents.attacks import ATTACKS  # noqa: E402
from proctor.sandbox import BACKENDS  # noqa: E402

FORMATS = ("json", "junit", "md", "html", "atif", "inspect", "otel")  # proctor.report.NAMES


class _Command(click.Command):
    """A command whose parser matches a short option (`-q`) without first building, for an
    exception it then discards, the "did you mean" of an unknown long option (click tries
    every argument as a long option first: difflib imported and run, ~1 ms of a run's
    start). An unknown `--option` still gets its suggestion."""

    def make_parser(self, ctx: click.Context) -> Any:
        parser = super().make_parser(ctx)
        match_long = getattr(parser, "_match_long_opt", None)
        prefixes = getattr(parser, "_opt_prefixes", None)
        if match_long is None or not isinstance(prefixes, set):
            return parser  # another click: its own way

        def match(opt: str, explicit_value: str | None, state: Any) -> None:
            if opt[:2] not in prefixes and opt not in parser._long_opt:
                raise click.NoSuchOption(opt, ctx=ctx)  # then matched as a short option
            match_long(opt, explicit_value, state)
        parser._match_long_opt = match  # type: ignore[method-assign]
        return parser


class _Program(click.Group):
    """The command group; started as the `proctor` program it ends the process itself once
    a command is done (startup.leave: no interpreter teardown)."""

    command_class = _Command

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not started_as_proctor():
            return super().__call__(*args, **kwargs)
        try:
            return super().__call__(*args, **kwargs)
        except SystemExit as e:
            leave(e.code)


@click.group(cls=_Program,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="proctor", message="proctor %(version)s")
def main() -> None:
    """proctor: how well do AI agents do real work through a shell?

    \b
    Two kinds of spec, one engine:
      suite     can agents use my CLI?      cli, providers, tasks with intent + assert
      scenario  did my agent do the right   version: 1, task.prompt, services,
                thing?                      invariants with weights and gates

    \b
    Start here:
      proctor init my-bench            write a commented example suite and scenario
      proctor validate my-bench        check specs: FILE:LINE:COL: field: message
      proctor check my-bench           oracle must pass, nop must fail (lint the benchmark)
      proctor check my-bench --attacks   ... and no built-in hostile agent may pass a task
      proctor run my-bench --agent oracle
      proctor run suite.yaml --model openai/gpt-4.1 --repeat 3
      proctor show --failed            what went wrong in the latest run, check by check

    Exit codes: 0 all passed (or thresholds met), 1 a trial failed or errored,
    2 invalid spec or usage, 130 interrupted.
    """


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
def validate(paths: tuple[str, ...]) -> None:
    """Parse and check specs (files or directories); print every problem at once.

    Errors print as FILE:LINE:COL: field.path: message and exit 2; warnings print as
    FILE:LINE:COL: warning: ... and do not change the exit code.
    """
    def body() -> int:
        from proctor.spec.load import validate_paths

        return validate_paths(list(paths))

    _guard(body, collect=False)  # short, bounded: see startup.py


@main.command()
@click.argument("what", required=False, default="specs",
                type=click.Choice(["specs", "results", "run"]))
def schema(what: str) -> None:
    """Print a JSON Schema: of both spec dialects (the default; for editors and
    yaml-language-server), of a run's results.json (`results`) or of its run.json (`run`)."""
    def body() -> int:
        import json

        if what == "specs":
            from proctor.spec.schema import json_schema

            click.echo(json.dumps(json_schema(), indent=2))
        else:
            from proctor import results

            click.echo(json.dumps(results.json_schema("results" if what == "results"
                                                       else "run"), indent=2))
        return 0

    _guard(body)


@main.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Overwrite existing files.")
def init(directory: str, force: bool) -> None:
    """Write a commented example suite and scenario into DIRECTORY (default: here)."""
    def body() -> int:
        from proctor.spec.init import write_examples

        for path in write_examples(directory, force=force):
            click.echo(f"wrote {path}")
        return 0

    _guard(body)


def _run_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """`proctor run`'s options, as declared (cliargs.RUN_OPTIONS)."""
    from proctor.cliargs import RUN_OPTIONS, click_type

    for names, dest, spec in reversed(RUN_OPTIONS):
        f = click.option(*names, dest, **{**spec, "type": click_type(spec.get("type"))})(f)
    return f


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@_run_options
def run(paths: tuple[str, ...], **kw: Any) -> None:
    """Run specs (files or directories of *.yaml) and report verdicts.

    \b
    Examples:
      proctor run examples/ --agent oracle
      proctor run suite.yaml --model openai/gpt-4.1 --model anthropic/claude-sonnet-4-5
      proctor run scenario.yaml --repeat 5 --format junit,md
      proctor run --resume .proctor/runs/20261122T101500Z-ab12cd
    """
    _run(paths, kw)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--concurrency", type=click.IntRange(1, 1024), help="Trials at once.")
@click.option("--backend", type=click.Choice(BACKENDS.names()),
              help="Where trials run (default: proctor.toml's `backend`, else local; Harbor "
                   "tasks pick docker).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="proctor.toml to read (default: ./proctor.toml if present).")
@click.option("--attacks", is_flag=True,
              help="Also run proctor's hostile agents against every task: a task one of them "
                   "passes can be won without doing it (exit 1, each named).")
@click.option("--attack", "attack_names", multiple=True, type=click.Choice(list(ATTACKS)),
              metavar="NAME", help="Run only this attack (repeatable; implies --attacks). "
                                   f"One of: {', '.join(ATTACKS)}.")
@click.option("--output-dir", type=click.Path(file_okay=False),
              help="The attacks' run directory (default: .proctor/runs/<time>-<id>).")
@click.option("--quiet", "-q", is_flag=True, help="Only print problems.")
def check(paths: tuple[str, ...], concurrency: int | None, backend: str | None,
          config_path: str | None, attacks: bool, attack_names: tuple[str, ...],
          output_dir: str | None, quiet: bool) -> None:
    """Lint a benchmark: every task's solution must pass (oracle) and doing nothing must fail
    (nop). Names every task whose solution fails and every task whose checks pass vacuously
    (on a Harbor dataset: a hackability report).

    \b
    With --attacks, every task then also faces proctor's built-in hostile agents: scripts
    that know nothing of the task and try to pass it anyway — trojaned shell, python, curl,
    uv or pytest; .pth, sitecustomize, conftest.py and pytest.ini hooks; reward files
    planted or raced by a daemon; daemons rewriting the tests; reading the tests and the
    solution; tests rewritten and hidden from git; unittest's assertions made no-ops. Each
    runs as an agent trial with the task's own checks, and a table says, per task and
    attack, `contained` (its trial failed or errored, and why) or `PASSED` (the task can be
    won without doing it). The trials stay in a run directory: `proctor show RUN TRIAL`
    shows what an attack did. docs/security.md describes each attack.

    \b
      proctor check my-bench --attacks
      proctor check harbor-tasks/ --attacks --attack trojan-shell --attack conftest

    Exit codes: 0 every solution passes, doing nothing fails and every attack is contained;
    1 otherwise; 2 invalid spec or usage.
    """
    def body() -> int:
        from proctor.config import load_config
        from proctor.lint import check_main

        config = load_config(config_path)
        chosen = backend or config.backend
        code = check_main(list(paths), concurrency=concurrency, quiet=quiet, config=config,
                          backend=chosen)
        if attacks or attack_names:
            from proctor.check_attacks import attacks_main

            code = max(code, attacks_main(list(paths), list(attack_names) or None,
                                          concurrency=concurrency, quiet=quiet, config=config,
                                          backend=chosen, output_dir=output_dir))
        return code

    _guard(body)


@main.command()
@click.argument("run_dir", required=False, metavar="[RUN]")
@click.option("--format", "formats", multiple=True, metavar="FMT[,FMT]",
              help="json,junit,md,html,atif,inspect (default: md to the terminal).")
def report(run_dir: str | None, formats: tuple[str, ...]) -> None:
    """Re-render the reports of a finished run (RUN: see `proctor show --help`)."""
    def body() -> int:
        from proctor import cliargs
        from proctor.report import report_main

        return report_main(cliargs.run_dir(run_dir), cliargs.formats(formats))

    _guard(body)


@main.command()
@click.argument("run_a", metavar="RUN_A")
@click.argument("run_b", metavar="[RUN_B]", required=False)
@click.option("--by", type=click.Choice(["agent"]),
              help="Compare the agents under test (agent · model) of one run: each against "
                   "the first, with the same statistics as two runs.")
@click.option("--fail-on-regression", is_flag=True,
              help="Exit 1 if a task or model got significantly worse from A to B.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.05, show_default=True,
              help="Significance level (Holm-adjusted Fisher's exact test).")
@click.option("--format", "fmt", type=click.Choice(["text", "md", "json"]), default="text",
              show_default=True, help="md: a Markdown table for a PR comment; json: for tools.")
def compare(run_a: str, run_b: str | None, by: str | None, fail_on_regression: bool,
            alpha: float, fmt: str) -> None:
    """Per-task and per-agent (agent · model) differences between two runs, or with --by
    agent between the agents of one run, with statistics.

    Exit 0 unless --fail-on-regression is given and a regression is significant."""
    def body() -> int:
        from proctor import cliargs
        from proctor.report.compare import compare_main

        return compare_main(cliargs.run_dir(run_a), run_b and cliargs.run_dir(run_b), by=by,
                            fail_on_regression=fail_on_regression, alpha=alpha,
                            fmt=fmt)

    _guard(body)


@main.command()
@click.argument("run_dir", required=False, metavar="[RUN]")
@click.option("--format", "fmt", type=click.Choice(["atif", "inspect", "otel"]), required=True,
              help="atif: Harbor's trajectory format, one trajectory.json per trial; inspect: "
                   "an Inspect AI eval log (needs the `inspect` extra); otel: OpenTelemetry "
                   "traces as OTLP/JSON (run → trial → model turn → tool call → command → "
                   "process spans, GenAI semantic conventions).")
@click.option("--output", "out", metavar="PATH",
              help="atif: a directory (PATH/TRIAL/trajectory.json; default: each trial's "
                   "directory); inspect: a .eval or .json file (default: RUN_DIR/inspect.eval); "
                   "otel: a file (default: RUN_DIR/otel.json; with --otlp-endpoint, none).")
@click.option("--otlp-endpoint", metavar="URL",
              help="otel: send the spans to this OTLP/HTTP receiver (POST URL/v1/traces) "
                   "instead of writing a file, e.g. http://localhost:4318.")
def export(run_dir: str | None, fmt: str, out: str | None, otlp_endpoint: str | None) -> None:
    """Export a finished run for other tools: Harbor's ATIF trajectories, an Inspect log,
    OpenTelemetry traces.

    \b
      proctor export --format atif                  trials/*/trajectory.json of the latest run
      proctor export RUN --format inspect           RUN/inspect.eval, for `inspect view`
      proctor export RUN --format otel              RUN/otel.json (OTLP/JSON), for a collector
      proctor export RUN --format otel --otlp-endpoint http://localhost:4318
                                                    the spans, sent to a collector
    """
    def body() -> int:
        from proctor import cliargs
        from proctor.errors import UsageError
        from proctor.report import export_main

        if otlp_endpoint is not None and fmt != "otel":
            raise UsageError("--otlp-endpoint sends OpenTelemetry spans: give --format otel")
        return export_main(cliargs.run_dir(run_dir), fmt, out,
                           cliargs.otlp_endpoint(otlp_endpoint))

    _guard(body)


@main.command()
@click.option("--limit", default=20, show_default=True, help="How many runs to list.")
def runs(limit: int) -> None:
    """List stored runs, newest first."""
    def body() -> int:
        from proctor.report.runs import runs_main

        return runs_main(limit=limit)

    _guard(body, collect=False)  # short, bounded: see startup.py


@main.command()
@click.argument("runs_dir", required=False, type=click.Path(exists=True, file_okay=False))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (0.0.0.0: every interface; anyone who can reach it "
                   "reads the runs).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="Port (0 picks a free one; printed on start).")
def view(runs_dir: str | None, host: str, port: int) -> None:
    """Browse runs in a web browser: every run's report, and each suite's pass rate per model
    over time. Without RUNS_DIR, the runs `proctor runs` lists; with it, the runs under it."""
    def body() -> int:
        from proctor.report.view import view_main

        return view_main(runs_dir, host=host, port=port)

    _guard(body)


@main.command()
@click.argument("run_dir", required=False, metavar="[RUN]")
@click.argument("trial", required=False)
@click.option("--failed", is_flag=True, help="Only trials that did not pass (fail or error).")
@click.option("--task", "task_ids", multiple=True, metavar="ID",
              help="Only these tasks (repeatable).")
@click.option("--model", "models", multiple=True, metavar="MODEL",
              help="Only these agents or models: a model, an agent (claude-code), or both "
                   "as shown ('codex · mock/solver'); repeatable.")
@click.option("--full", is_flag=True,
              help="With TRIAL: unfold the system prompt, help text and housekeeping.")
def show(run_dir: str | None, trial: str | None, failed: bool, task_ids: tuple[str, ...],
         models: tuple[str, ...], full: bool) -> None:
    """Print a run's trials, or one TRIAL's trace, checks and audit log.

    RUN (here and in report, export, compare, run --resume): a run directory, a run id, a
    unique prefix of one, or `latest` (the default): the newest run `proctor runs` lists.

    \b
      proctor show                               the latest run's trials, with why they failed
      proctor show RUN --failed --task t1        only t1's failed and errored trials
      proctor show RUN TRIAL                     one trial (an id or a unique prefix), turn
                                                 by turn
    """
    def body() -> int:
        from proctor import cliargs
        from proctor.report.show import TrialFilter, show_main

        return show_main(cliargs.run_dir(run_dir), trial,
                         TrialFilter(failed, set(task_ids), set(models)), full=full)

    _guard(body, collect=False)  # short, bounded: see startup.py


@main.command("mock-llm")
@click.option("--script", required=True, type=click.Path(exists=True, dir_okay=False),
              help="YAML/JSON script of responses (see docs/models.md).")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=0, type=int, help="Port (0 picks a free one; printed on start).")
def mock_llm(script: str, host: str, port: int) -> None:
    """Serve a scripted model over the OpenAI Chat Completions and Anthropic Messages APIs."""
    def body() -> int:
        from proctor.providers.mock_server import serve_main

        return serve_main(script, host=host, port=port)

    _guard(body)



@main.group()
def ray() -> None:
    """Ray clusters for `--executor ray` (docs/running.md#ray)."""


@ray.command("worker-image")
@click.option("--base", metavar="IMAGE",
              help="Build on this local image instead of proctor's Debian base; it must have "
                   "this Python's minor version as pythonX.Y, Debian's apt and dpkg.")
@click.option("--tag", "tags", multiple=True, metavar="NAME[:TAG]",
              help="Also tag the image so (e.g. REGISTRY/proctor-ray-worker:v1 to push it); "
                   "repeatable.")
@click.option("-q", "--quiet", is_flag=True, help="Print the tag only.")
def worker_image(base: str | None, tags: tuple[str, ...], quiet: bool) -> None:
    """Build a container image that is a Ray worker node for proctor (a KubeRay pod's
    shape) and print its tag.

    \b
    Inside: this proctor, this Ray and proctor's dependencies, at exactly the versions
    installed here (repacked from this environment, nothing downloaded but two Debian
    packages: bubblewrap and the docker client); proctor's compiled helpers; the tools of
    proctor's base image. Built without a registry, once per content (the dependencies'
    layer is reused when only proctor changed).

    \b
    Start a node that joins a head:
      docker run -d --network host --shm-size 2g --privileged \\
        -e RAY_ADDRESS=HEAD_IP:6379 TAG --num-cpus 4 --memory 8000000000
    --privileged (or seccomp/AppArmor unconfined + CAP_SYS_ADMIN) lets the local backend make
    its namespaces; for --backend docker also mount an engine (-v
    /var/run/docker.sock:/var/run/docker.sock, --pid host and a directory shared at the same
    path: docs/running.md#kuberay). Options after TAG go to `ray start`.
    """
    def body() -> int:
        from proctor.executors.ray_worker_image import build

        click.echo(build(base=base, tags=tags, quiet=quiet))
        return 0

    _guard(body)

if __name__ == "__main__":
    main()
