"""Start-up cost (issue 37): what `proctor --help`, `run` of one trivial local trial,
`validate`, `runs` and `show` import, each in a fresh interpreter.

Two checks, neither a wall-clock one. The hard one is the module list: a command must not
import what it does not use (pydantic for `--help` and `runs`, the Harbor and scenario
dialects for a suite, the mock model's script models, urllib's HTTP client, the HTML report,
Ray, Inspect AI ...), and at most so many modules in all. The second is a budget of CPU time
(not wall time: a loaded machine's waits for a CPU do not count) for importing exactly the
modules a trivial `proctor run` imported, as the `proctor` program imports them (the
collector held, generated code from its cache: proctor/startup.py, codecache.py), best of
three fresh interpreters after the one that fills the cache, with ample
headroom over the figure on a quiet machine (docs/benchmarks.md): it catches a heavy
library pulled onto the path, not a few milliseconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.spec import ONE_TASK_SUITE as SUITE

# Runs the CLI in this interpreter, then lists every module it imported (import order).
CHILD = """
import json, sys
argv, out = json.loads(sys.argv[1]), sys.argv[2]
sys.argv = ["proctor", *argv]
from proctor.cli import main
code = 0
try:
    main()
except SystemExit as e:
    code = e.code
def subclasses(c):
    for s in c.__subclasses__():
        yield s
        yield from subclasses(s)
main_ = sys.modules.get("pydantic.main")  # the models whose validator was built
built = [f"{c.__module__}.{c.__qualname__}" for c in subclasses(main_.BaseModel)
         if c.__pydantic_complete__] if main_ else []
with open(out, "w") as f:
    json.dump({"code": code, "modules": list(sys.modules), "built": built}, f)
"""

# Imports a module list in a fresh interpreter: the CPU milliseconds it took.
IMPORTER = """
import importlib, json, sys, time
mods = json.load(open(sys.argv[1]))["modules"]
started = time.process_time()
import gc
gc.disable()  # as the proctor program starts: collector held, generated code cached
from proctor import codecache
codecache.install(codecache.CodeCache(codecache.default_path("run")))
for m in mods:
    try:
        importlib.import_module(m)
    except Exception:
        pass  # an alias or a module made at run time: what matters is imported already
print(round((time.process_time() - started) * 1000, 1))
"""

# Nothing a trivial run or a listing needs; each is a library or a part of proctor that
# costs milliseconds to import and belongs to another kind of run.
NEVER = ("ray", "inspect_ai", "jinja2", "httpx", "openai", "anthropic", "numpy",
         "proctor.executors.ray", "proctor.report.html", "proctor.report.view",
         "proctor.report.inspect_log", "proctor.report.atif", "proctor.sandbox.docker",
         "proctor.agents.llm", "proctor.agents.claude_code", "proctor.agents.codex",
         "proctor.agents.mini_swe_agent", "proctor.services.postgres",
         "proctor.services.mysql", "proctor.providers.openai", "proctor.providers.anthropic",
         # a suite's: not the other dialects, not the mock model, no HTTP client
         "proctor.spec.harbor", "proctor.spec.harbor_config", "proctor.spec.scenario",
         "proctor.spec.compose", "tomllib", "proctor.providers.mock",
         "proctor.providers.script", "urllib.request", "http.client", "proctor.check_attacks",
         "proctor.lint", "proctor.report.compare")
# rich draws the progress bar and the tables, which `-q` leaves out. pydantic is not imported
# for a valid suite: spec/plain.py reads it, and its check configs and proctor.toml (or its
# defaults) are declared classes (proctor/declared.py) read without it; pydantic's plugin
# loader, which scans every installed package's entry points (importlib.metadata, email),
# came with it. The suite dialect's models (and the services' module) are imported only for
# a spec the plain reader leaves to them.
# The progress bar's model labels (and report.data under them) only with several models.
RUN_NEVER = (*NEVER, "rich", "pydantic", "pydantic_core", "importlib.metadata", "email",
             "proctor.spec.suite", "proctor.spec.services", "proctor.spec.base",
             "proctor.report.labels", "proctor.report.data",
             # an exact fraction only for a comparison's Fisher test (stats.hypergeom_pmf)
             "fractions", "decimal",
             # the installer substitutes only at a box's first request for the outside; a
             # service's seed files only for a task with services
             "proctor.sandbox.substitutes", "proctor.services.seed",
             # the model providers' settings, retries and prices: for trials that call a model
             "proctor.providers.settings", "proctor.providers.retry", "proctor.providers.prices",
             # click's "did you mean" is for an unknown --option, not for `-q` (cli._Command)
             "difflib",
             # a docker run's engine client, `file://` task includes, --resume's sweep,
             # forwarded ports' namespace entry
             "proctor.engineapi", "glob", "proctor.janitor", "proctor.netns")
VALIDATE_NEVER = (*RUN_NEVER, "proctor.run", "proctor.trial", "proctor.sandbox.native",
                  "sqlite3")
# `show` reads results.json (checked with pydantic); it and `runs` print with rich.
SHOW_NEVER = (*NEVER, "yaml", "proctor.spec.load", "proctor.run", "proctor.trial")
RUNS_NEVER = (*SHOW_NEVER, "pydantic", "pydantic_core")
HELP_NEVER = (*RUNS_NEVER, "rich", "asyncio", "sqlite3", "proctor.checks.base",
              "proctor.store", "proctor.report", "proctor.results", "proctor.model")

MAX_MODULES = 345  # a trivial run imports ~315 (CPython's own included)
MAX_MODULES_READ_BEFORE = 310  # ~294 when its spec comes from the cache (no PyYAML)
RUN_IMPORT_CPU_MS = 200  # ~80-90 ms on the 2-core machine at load 2 (~110-120 without the
# program's held collector and code cache); module doc


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    # Bytecode cached as after an install (this machine may set PYTHONDONTWRITEBYTECODE):
    # compiling the sources is not start-up cost.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")
    return env


def imported(tmp_path: Path, *argv: str) -> tuple[int, list[str]]:
    """`proctor ARGV` in a fresh interpreter: its exit code and the modules it imported."""
    code, modules, _ = imported_and_built(tmp_path, *argv)
    return code, modules


def imported_and_built(tmp_path: Path, *argv: str) -> tuple[int, list[str], list[str]]:
    """... and the pydantic models whose validator (or serializer) it built."""
    out = tmp_path / f"modules-{len(list(tmp_path.glob('modules-*')))}.json"
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(list(argv)), str(out)],
                          cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True,
                          timeout=120)
    assert out.exists(), proc.stderr[-3000:]
    data = json.loads(out.read_text())
    return data["code"], data["modules"], data["built"]


def _offending(modules: list[str], never: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in never)]


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "suite.yaml").write_text(SUITE)
    return tmp_path / "suite.yaml"


def test_help_imports_no_pydantic_yaml_event_loop_or_command_module(tmp_path):
    code, modules = imported(tmp_path, "--help")
    assert code == 0
    assert not _offending(modules, HELP_NEVER)
    assert len(modules) < MAX_MODULES


def test_a_trivial_run_imports_only_what_it_uses(tmp_path, suite):
    code, modules, built = imported_and_built(tmp_path, "run", str(suite), "--agent", "oracle",
                                              "-q", "--output-dir", str(tmp_path / "run"))
    assert code == 0
    assert built == []  # the suite, its check config and the default proctor.toml: read plainly
    assert json.loads((tmp_path / "run" / "results.json").read_text())["summary"]["passed"] == 1
    assert not _offending(modules, RUN_NEVER)
    # Of the check modules, only the one the suite uses (and what checks share).
    checks = {m for m in modules if m.startswith("proctor.checks.") and
              not m.split(".")[2].startswith("_")}
    assert checks <= {"proctor.checks.base", "proctor.checks.file_contains"}, checks
    assert len(modules) < MAX_MODULES, len(modules)


def test_a_built_in_mock_models_run_imports_no_pydantic(tmp_path, suite):
    """mock/solver's script is plain (providers/script_engine.py): the llm agent's run of a
    valid suite builds no model and imports neither pydantic nor the script file models."""
    code, modules, built = imported_and_built(tmp_path, "run", str(suite), "--model",
                                              "mock/solver", "-q", "--output-dir",
                                              str(tmp_path / "run"))
    assert code == 0
    assert json.loads((tmp_path / "run" / "results.json").read_text())["summary"]["passed"] == 1
    assert built == []
    assert "proctor.agents.llm" in modules and "proctor.providers.script_engine" in modules
    llm_run = ("proctor.agents.llm", "proctor.providers.mock", "proctor.providers.settings",
               "proctor.providers.retry", "proctor.providers.prices")
    assert not _offending(modules, tuple(n for n in RUN_NEVER if n not in llm_run))


def test_a_valid_proctor_toml_is_read_without_pydantic(tmp_path, suite):
    """proctor.toml's tables are declared classes: a valid file is read plainly."""
    (tmp_path / "proctor.toml").write_text(
        'pass_env = ["LANG*"]\ntimeout_multiplier = 2\n'
        'public_addresses = ["203.0.113.0/24"]\nbackend = "local"\n'
        '[llm]\nmax_tokens = 1000\n[retry]\nmax_attempts = 2\n'
        '[providers.lab]\nkind = "openai"\nbase_url = "http://lab:8000/v1"\n'
        '[prices."lab/*"]\ninput = 0.1\noutput = 0.2\n'
        '[[substitutes]]\nurl = "https://example.org/a.tgz"\nfile = "a.tgz"\n')
    code, modules, _ = imported_and_built(tmp_path, "run", str(suite), "--agent", "oracle",
                                          "-q", "--output-dir", str(tmp_path / "run"))
    assert code == 0
    assert not _offending(modules, tuple(n for n in RUN_NEVER if n != "tomllib"))
    assert "tomllib" in modules
    (tmp_path / "proctor.toml").write_text("[llm]\nmax_tokens = 0\n")  # the model words it
    code, modules, _ = imported_and_built(tmp_path, "run", str(suite), "--agent", "oracle")
    assert code == 2 and "pydantic" in modules


def test_a_spec_read_before_is_not_parsed_again(tmp_path, suite):
    """Its data comes from the cache (spec/yamlcache.py): no YAML parser is imported."""
    first, _ = imported(tmp_path, "validate", str(suite))  # parsed (or read before)
    assert first == 0
    code, modules = imported(tmp_path, "run", str(suite), "--agent", "oracle", "-q",
                             "--output-dir", str(tmp_path / "run"))
    assert code == 0
    assert not _offending(modules, ("yaml", "proctor.spec.yamlparse"))
    assert len(modules) < MAX_MODULES_READ_BEFORE, len(modules)


def test_validate_imports_only_the_suite_dialect(tmp_path, suite):
    code, modules, built = imported_and_built(tmp_path, "validate", str(suite))
    assert code == 0
    assert not _offending(modules, VALIDATE_NEVER)
    assert built == []


def test_a_suite_the_plain_reader_rejects_is_worded_by_the_models(tmp_path):
    """The other side of the plain reader: pydantic builds the model to word the error."""
    (tmp_path / "bad.yaml").write_text(SUITE.replace("cli: sh", "cli: sh\nconcurrency: 0"))
    code, _, built = imported_and_built(tmp_path, "validate", str(tmp_path / "bad.yaml"))
    assert code == 2
    assert "proctor.spec.suite.Suite" in built


@pytest.mark.parametrize("argv", [("runs",), ("show",)])
def test_listings_import_no_yaml_and_runs_no_pydantic(tmp_path, suite, argv):
    first, _ = imported(tmp_path, "run", str(suite), "--agent", "oracle", "-q")
    assert first == 0
    code, modules = imported(tmp_path, *argv)
    assert code == 0
    assert not _offending(modules, RUNS_NEVER if argv == ("runs",) else SHOW_NEVER)


def test_importing_a_trivial_runs_modules_stays_within_its_cpu_budget(tmp_path, suite):
    code, _ = imported(tmp_path, "run", str(suite), "--agent", "oracle", "-q",
                       "--output-dir", str(tmp_path / "run"))
    assert code == 0
    listing = next(tmp_path.glob("modules-*.json"))
    costs = []
    for _ in range(4):
        proc = subprocess.run([sys.executable, "-c", IMPORTER, str(listing)], cwd=tmp_path,
                              env={**_env(tmp_path), "PROCTOR_CACHE": str(tmp_path / "cache")},
                              capture_output=True, text=True, timeout=120, check=True)
        costs.append(float(proc.stdout))
        if costs[-1] <= RUN_IMPORT_CPU_MS and len(costs) > 1:  # the first fills the cache
            break
    assert min(costs) <= RUN_IMPORT_CPU_MS, (
        f"importing a trivial run's modules took {costs} ms of CPU; see "
        "`python -X importtime -c 'import proctor.cli'` and docs/benchmarks.md")


def test_a_trivial_scenario_run_imports_no_pydantic(tmp_path):
    (tmp_path / "s.yaml").write_text(
        "version: 1\ntask: {prompt: Write the file.}\nsolution: ['echo hello > out.txt']\n"
        "invariants:\n  written: {description: out.txt, check: {type: file_exists, "
        "path: out.txt}}\n")
    code, modules, built = imported_and_built(tmp_path, "run", str(tmp_path / "s.yaml"),
                                              "--agent", "oracle", "-q", "--output-dir",
                                              str(tmp_path / "run"))
    assert code == 0
    assert json.loads((tmp_path / "run" / "results.json").read_text())["summary"]["passed"] == 1
    # The scenario's models, secrets and services only for what the plain reader leaves.
    assert built == [] and "proctor.spec.scenario_load" in modules
    assert not _offending(modules, (*RUN_NEVER, "proctor.spec.secrets"))


def test_a_short_option_is_matched_without_a_did_you_mean_and_unknown_ones_keep_theirs(suite):
    """click tries each argument as a long option first; proctor's commands skip the "did you
    mean" (difflib) it would build for `-q` and then discard. What a user sees is click's."""
    from click.testing import CliRunner

    from proctor import cli

    runner = CliRunner()
    out = runner.invoke(cli.main, ["run", str(suite), "--agent", "oracle", "--qiet"])
    assert out.exit_code == 2
    assert "No such option '--qiet'" in out.output and "'--quiet'" in out.output
    for bad, said in (("-Z", "-Z"), ("-qZ", "-Z"), ("-aoracle", "-a")):
        out = runner.invoke(cli.main, ["run", str(suite), bad])
        assert out.exit_code == 2 and f"No such option '{said}'." in out.output, out.output


# Started as the `proctor` program, a plain `proctor run` is read without click
# (cliargs.sure_run); what only click imports then stays out.
PROGRAM_RUN_NEVER = (*RUN_NEVER, "click", "uuid", "platform", "gettext",
                     "proctor.agents.attacks")

PROGRAM = """#!{python}
import atexit, json, sys
atexit.register(lambda: json.dump(list(sys.modules), open({out!r}, "w")))
from proctor.cli import main
if __name__ == '__main__':
    sys.argv[0] = sys.argv[0].removesuffix('.exe')
    sys.exit(main())
"""


def test_the_program_reads_a_plain_run_without_click(tmp_path, suite):
    script = tmp_path / "bin" / "proctor"  # the console script, as installed
    script.parent.mkdir()
    script.write_text(PROGRAM.format(python=sys.executable, out=str(tmp_path / "modules")))
    script.chmod(0o755)
    proc = subprocess.run([str(script), "run", str(suite), "--agent", "oracle", "-q",
                           "--output-dir", str(tmp_path / "run")], cwd=tmp_path,
                          env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    modules = json.loads((tmp_path / "modules").read_text())
    assert not _offending(modules, PROGRAM_RUN_NEVER)
    assert len(modules) < MAX_MODULES - 15, len(modules)


def test_every_dataclass_has_a_docstring():
    """A dataclass without one gets a docstring made of its signature, by
    `inspect.signature`, when its module is imported (~30 µs a class, ~1 ms of a run's start)."""
    import ast

    src = Path(__file__).resolve().parents[1] / "src" / "proctor"
    bare = []
    for path in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.ClassDef) and ast.get_docstring(node) is None
                    and any("dataclass" in ast.unparse(d) for d in node.decorator_list)):
                bare.append(f"{path.relative_to(src)}:{node.lineno} {node.name}")
    assert not bare, bare
