"""The agent install cache: pinned versions installed once, by the real npm and pip, from a
registry on loopback and a directory of wheels (no network: the real agents come from the
cache ./setup.sh fills)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading

import pytest

from proctor.agents.install import MARKER, agents_home, install_npm, install_pip
from proctor.errors import UsageError
from tests.agents.registries import NpmRegistry, wheel

FAKE_JS = "#!/usr/bin/env node\nconsole.log('fake-agent ' + require('../package.json').version)\n"
needs_npm = pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")


@pytest.fixture
def npm(tmp_path, monkeypatch):
    registry = NpmRegistry()
    registry.publish("proctor-fake-agent", "1.2.3", {"bin/fake.js": FAKE_JS},
                     {"fake-agent": "bin/fake.js"})
    monkeypatch.setenv("npm_config_registry", registry.url)
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))  # every byte from here
    monkeypatch.setenv("npm_config_update_notifier", "false")
    monkeypatch.setenv("npm_config_offline", "false")  # the registry is local
    monkeypatch.setenv("PROCTOR_AGENTS", str(tmp_path / "agents"))
    yield registry
    registry.close()


@needs_npm
def test_npm_agent_installs_once_under_proctor_home(npm, tmp_path, monkeypatch):
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PROCTOR_AGENTS")
    exe = install_npm("fake", "proctor-fake-agent", "1.2.3", "fake-agent")
    assert exe == agents_home() / "fake-1.2.3" / "node_modules" / ".bin" / "fake-agent"
    assert agents_home() == (tmp_path / "home" / "agents").resolve()
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.stdout == "fake-agent 1.2.3\n"
    assert install_npm("fake", "proctor-fake-agent", "1.2.3", "fake-agent") == exe
    assert npm.downloads == {"proctor-fake-agent-1.2.3.tgz": 1}  # the cache, not a second install
    assert (agents_home() / "fake-1.2.3" / MARKER).is_file()


@needs_npm
def test_concurrent_installs_install_once(npm):
    exes, errors = [], []

    def install() -> None:
        try:
            exes.append(install_npm("fake", "proctor-fake-agent", "1.2.3", "fake-agent"))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=install) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(exes)) == 1
    assert npm.downloads == {"proctor-fake-agent-1.2.3.tgz": 1}


@needs_npm
def test_an_interrupted_install_is_redone_not_used(npm, tmp_path):
    half = tmp_path / "agents" / "fake-1.2.3"
    (half / "node_modules").mkdir(parents=True)  # what a killed `npm install` left, no marker
    exe = install_npm("fake", "proctor-fake-agent", "1.2.3", "fake-agent")
    assert exe.is_file() and (half / MARKER).is_file()


@needs_npm
def test_versions_must_be_exact_and_failures_say_why(npm, tmp_path):
    with pytest.raises(UsageError, match="not an exact version"):
        install_npm("fake", "proctor-fake-agent", "^1", "fake-agent")
    with pytest.raises(UsageError, match=r"installing proctor-no-such-pkg@1\.0\.0 failed: "
                                         r"npm install --prefix …: 404 Not Found - GET http://127"):
        install_npm("nope", "proctor-no-such-pkg", "1.0.0", "nope")
    assert not (tmp_path / "agents" / "nope-1.0.0").exists()  # nothing half-made left


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """A directory of wheels pip installs from, and nothing else."""
    directory = tmp_path / "wheels"
    directory.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(directory))
    monkeypatch.setenv("PROCTOR_AGENTS", str(tmp_path / "agents"))
    return directory


def test_pip_agent_and_its_extras_install_into_their_own_venv(wheels, tmp_path):
    wheel(wheels, "proctor-fake-agent", "2.0.1",
          "import proctor_fake_dep\ndef main():\n    print('fake', proctor_fake_dep.WHO)\n",
          {"fake-agent": "proctor_fake_agent:main"})
    wheel(wheels, "proctor-fake-dep", "0.1", "WHO = 'with its undeclared dependency'\n")
    wheel(wheels, "proctor-fake-dep", "0.2", "WHO = 'the wrong version'\n")
    exe = install_pip("fake", "proctor-fake-agent", "2.0.1", "fake-agent",
                      ("proctor-fake-dep==0.1",))
    venv = tmp_path / "agents" / "fake-2.0.1"
    assert exe == venv / "bin" / "fake-agent" and (venv / MARKER).is_file()
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.stdout == "fake with its undeclared dependency\n", out.stderr
    assert install_pip("fake", "proctor-fake-agent", "2.0.1", "fake-agent") == exe
    # proctor's exit hook: the venv's interpreter (and no other) registers gc.freeze at exit
    probe = "import atexit, gc; atexit._run_exitfuncs(); print(gc.get_freeze_count() > 0)"
    out = subprocess.run([str(venv / "bin" / "python"), "-c", probe], capture_output=True,
                         text=True, timeout=60)
    assert out.stdout == "True\n", out.stderr
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.stdout == "False\n", out.stderr


def test_a_pip_version_that_does_not_exist_says_so(wheels, tmp_path):
    wheel(wheels, "proctor-fake-agent", "2.0.1", "def main():\n    pass\n",
          {"fake-agent": "proctor_fake_agent:main"})
    with pytest.raises(UsageError, match=r"installing proctor-fake-agent==9\.9\.9 failed: .*"
                                         r"(No matching distribution|from versions: 2\.0\.1)"):
        install_pip("fake", "proctor-fake-agent", "9.9.9", "fake-agent")
    assert not (tmp_path / "agents" / "fake-9.9.9").exists()


@needs_npm
def test_an_unreachable_registry_says_so(npm, monkeypatch):
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    with pytest.raises(UsageError, match=r"failed: npm install --prefix …: FetchError: "
                                         r"request to http://127\.0\.0\.1:9/.* ECONNREFUSED"):
        install_npm("fake", "proctor-fake-agent", "1.2.3", "fake-agent")


# A stand-in for Claude Code published to the loopback registry: it asks the model proctor
# points it at (ANTHROPIC_BASE_URL, a dummy key) once, writes the answer, prints it as
# `claude -p --output-format json` does.
FAKE_CLAUDE = """#!/usr/bin/env node
const prompt = process.argv[process.argv.indexOf('-p') + 1];
fetch(process.env.ANTHROPIC_BASE_URL + '/v1/messages', {
  method: 'POST',
  headers: {'content-type': 'application/json', 'x-api-key': process.env.ANTHROPIC_API_KEY,
            'anthropic-version': '2023-06-01'},
  body: JSON.stringify({model: 'mock', max_tokens: 100,
                        messages: [{role: 'user', content: prompt}]}),
}).then(r => r.json()).then(answer => {
  require('fs').writeFileSync('answer.txt', answer.content[0].text);
  console.log(JSON.stringify({type: 'result', result: answer.content[0].text}));
});
"""


@needs_npm
def test_proctor_run_installs_the_pinned_version_on_first_use(npm, tmp_path, monkeypatch):
    """`proctor run` with `agent: {type: claude-code, version: …}`: the version is
    installed into $PROCTOR_HOME/agents by the real npm before the first trial, says so,
    is recorded in run.json and reused by the next run; the agent reaches the model through
    proctor's proxy."""
    from tests.helpers.cli import Cli, results, run_dir_of

    npm.publish("@anthropic-ai/claude-code", "9.9.9", {"cli.js": FAKE_CLAUDE},
                {"claude": "cli.js"})
    monkeypatch.delenv("PROCTOR_AGENTS")
    home = tmp_path / "home"
    (tmp_path / "say.yaml").write_text(
        "conversations:\n  - when: {prompt_contains: fake}\n    turns: [{say: forty-two}]\n")
    (tmp_path / "spec.yaml").write_text(
        "version: 1\nid: fake\ntask: {prompt: the fake agent's task}\n"
        "agent: {type: claude-code, version: 9.9.9, model: mock/say.yaml}\n"
        "invariants:\n  answered:\n    description: the model's answer, written by the agent\n"
        "    check: {type: file_content, path: answer.txt, contains: forty-two}\n")
    cli = Cli(tmp_path)
    first = cli("run", "spec.yaml", env={"PROCTOR_HOME": str(home)}, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    cache = (home / "agents" / "claude-code-9.9.9").resolve()
    assert f"proctor: installing claude-code 9.9.9 into {cache}" in first.stderr
    # Issue 38: a first install (≈18 s for the real ones) showed no progress. Without a
    # terminal: a line per step and one at the end, elapsed, no escape codes.
    lines = first.stderr.splitlines()
    what = "installing @anthropic-ai/claude-code@9.9.9"
    step = lines.index(f"proctor: {what} (1 step)") + 1
    assert re.fullmatch(rf"proctor: {what}: 1/1 npm install @anthropic-ai/claude-code@9\.9\.9 · "
                        r"0:\d\d", lines[step]), lines
    assert re.fullmatch(r"proctor: installed @anthropic-ai/claude-code@9\.9\.9 in 0:\d\d",
                        lines[step + 1]), lines
    assert "\x1b" not in first.stderr
    assert (cache / MARKER).is_file()
    run = run_dir_of(first)
    [t] = results(run)["trials"]
    assert t["status"] == "pass" and t["output"] == "forty-two"
    assert t["turns"] == 1 and t["tokens"]["input"] > 0  # through the proxy
    assert json.loads((run / "run.json").read_text())["versions"]["claude-code"] == "9.9.9"
    again = cli("run", "spec.yaml", env={"PROCTOR_HOME": str(home)}, timeout=300)
    assert again.returncode == 0 and "installing" not in again.stderr
    assert npm.downloads == {"claude-code-9.9.9.tgz": 1}
