"""`codex`: OpenAI's Codex CLI (npm), run headless with `codex exec` over the Responses API."""

from __future__ import annotations

from typing import Any

from proctor.agents.external import ExternalAgent, Wiring, shell_command

# Besides the model, nothing to reach: no update check, no analytics, no plugin sync (a
# `git ls-remote` of its plugin index and ChatGPT's catalogs at every start). No login
# shell for tool calls: Codex runs `bash -lc CMD` until its shell snapshot is ready (a race
# at start-up), and a login shell's profile runs programs of its own (`id -u` in
# /etc/profile) and resets PATH; `bash -c CMD` runs the command in the box's environment,
# as every other agent does.
CONFIG = """model = "{model}"
model_provider = "proctor"
check_for_update_on_startup = false
allow_login_shell = false

[analytics]
enabled = false

[features]
plugins = false

[model_providers.proctor]
name = "proctor"
base_url = "{base_url}/v1"
env_key = "PROCTOR_MODEL_KEY"
wire_api = "responses"
"""


class Codex(ExternalAgent):
    name = "codex"
    package = "@openai/codex"
    version = "0.169.0"
    installer = "npm"
    binary = "codex"
    apis = ("openai",)
    # Every shell tool command runs under Codex's own process set-up (the binary again),
    # then its snapshot-override bash, then `bash -c CMD`: the tool call's command. The
    # first two are Codex's machinery. Everything else Codex starts (OS detection, its
    # shell snapshot, a plugin index lookup) is housekeeping.
    tool_process = r"^/proc/self/exe --codex-run-as-process-setup "
    wrappers = (tool_process, r"^(/usr)?/bin/bash -c '__CODEX_SNAPSHOT_OVERRIDE")

    state_paths = (".codex/",)  # its own files under HOME

    def shell_tool(self, command: str) -> tuple[str, dict[str, Any]]:
        return "exec_command", {"cmd": command}

    def unwrap(self, argv: list[str]) -> str | None:
        return shell_command(argv, ("/usr/bin/bash", "/bin/bash"))

    def argv(self, exe: str, prompt: str, w: Wiring) -> list[str]:
        return [exe, "exec", "--dangerously-bypass-approvals-and-sandbox",
                "--skip-git-repo-check", prompt]

    def environment(self, w: Wiring) -> dict[str, str]:
        return {"CODEX_HOME": f"{w.home}/.codex", "PROCTOR_MODEL_KEY": "proctor-proxy"}

    def files(self, w: Wiring) -> dict[str, str]:
        files = {".codex/config.toml": CONFIG.format(model=w.model, base_url=w.base_url)}
        if w.instructions:  # the help text and the suite's system_prompt: its global AGENTS.md
            files[".codex/AGENTS.md"] = w.instructions
        return files
