"""`claude-code`: Anthropic's Claude Code CLI (npm), run headless with `claude -p`."""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from proctor.agents.external import ExternalAgent, Wiring

_EVAL = re.compile(r"&& eval (.*?)(?: < /dev/null)? && pwd -P >\| \S+$", re.S)


class ClaudeCode(ExternalAgent):
    name = "claude-code"
    package = "@anthropic-ai/claude-code"
    version = "2.1.331"
    installer = "npm"
    binary = "claude"
    apis = ("anthropic",)
    # Every Bash tool command runs as `bash -c [-l] '… && eval CMD [< /dev/null] && pwd -P
    # >| /tmp/claude-XXXX-cwd'` (see unwrap), sourcing its shell snapshot first when there
    # is one: matched on that tail, which a command cannot change (without a snapshot, a
    # command matched on the head would pass for housekeeping). Everything else Claude Code
    # starts (its shell snapshot, `env`, `id -u`, tool discovery) is housekeeping.
    tool_process = r"(?s)^/bin/bash -c (-l )?'.* && eval .* && pwd -P >\| \S*/claude-\w+-cwd'$"

    # A failing model endpoint: 4 retries (about 10 s) instead of 10 (about 3 minutes).
    defaults = {"CLAUDE_CODE_MAX_RETRIES": "4"}

    # Its own files: under HOME, and its scratch files in /tmp (cwd tracking, fs probes).
    state_paths = (".claude.json", ".claude/", "/tmp/claude-")

    def shell_tool(self, command: str) -> tuple[str, dict[str, Any]]:
        return "Bash", {"command": command, "description": "run a command"}

    def argv(self, exe: str, prompt: str, w: Wiring) -> list[str]:
        # The help text and the suite's system_prompt: at the end of its system prompt.
        told = ["--append-system-prompt", w.instructions] if w.instructions else []
        return [exe, "-p", prompt, "--output-format", "json",
                "--dangerously-skip-permissions", "--model", w.model, *told]

    def environment(self, w: Wiring) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": w.base_url,
                "ANTHROPIC_API_KEY": "proctor-proxy",  # the proxy holds the real key
                "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
                "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "IS_SANDBOX": "1"}  # lets --dangerously-skip-permissions run as root

    def unwrap(self, argv: list[str]) -> str | None:
        """The Bash tool runs `bash -c [-l] '[source SNAPSHOT …] && eval 'CMD' [< /dev/null]
        && pwd -P >| FILE'`: the agent's command is CMD."""
        if argv[1:-1] in (["-c"], ["-c", "-l"]) and (m := _EVAL.search(argv[-1])):
            try:
                words = shlex.split(m.group(1))
            except ValueError:
                return None
            return words[0] if len(words) == 1 else None
        return None

    def answer(self, stdout: str) -> str:
        try:
            return str(json.loads(stdout).get("result") or "")
        except (ValueError, AttributeError):
            return stdout
