"""`mini-swe-agent` (PyPI), run headless with `mini -y --exit-immediately` through litellm."""

from __future__ import annotations

import json
from typing import Any

from proctor.agents.base import AgentEnv
from proctor.agents.external import ExternalAgent, Wiring, shell_command
from proctor.agents.instructions import ahead_of

TRAJECTORY_LIMIT = 64 << 20  # bytes read of its trajectory file; a longer one is not parsed


class MiniSweAgent(ExternalAgent):
    name = "mini-swe-agent"
    package = "mini-swe-agent"
    version = "2.4.6"
    installer = "pip"
    binary = "mini"
    extras = ("mcp==2.3.0",)  # imported by mini-swe-agent 2.4.6 but not declared
    apis = ("openai", "anthropic")
    # Its bash tool runs `/bin/sh -c CMD` (subprocess, shell=True); the rest it starts
    # (`uname -p` from Python's platform module) is housekeeping, and so is its way of
    # saying it is done.
    tool_process = r"^/bin/sh -c "
    housekeeping = (r"^echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT$",)
    mock_finish = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

    defaults = {"MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": "2"}  # a dead endpoint fails fast

    state_paths = ("trajectory.json", ".config/mini-swe-agent/", ".cache/")  # its own files under HOME

    def shell_tool(self, command: str) -> tuple[str, dict[str, Any]]:
        return "bash", {"command": command}

    def unwrap(self, argv: list[str]) -> str | None:
        return shell_command(argv, ("/bin/sh",))

    def argv(self, exe: str, prompt: str, w: Wiring) -> list[str]:
        base = w.base_url if w.kind == "anthropic" else f"{w.base_url}/v1"
        # Its only channel besides its fixed templates: the task text, help text first.
        task = ahead_of(prompt, w.instructions)
        return [exe, "-y", "--exit-immediately", "--cost-limit", "0", "--task", task,
                "--model", f"{w.kind}/{w.model}", "-c", "mini.yaml",
                "-c", f"model.model_kwargs.api_base={base}",
                "--output", f"{w.home}/trajectory.json"]

    def environment(self, w: Wiring) -> dict[str, str]:
        return {f"{w.kind.upper()}_API_KEY": "proctor-proxy",  # the proxy holds the real key
                "MSWEA_CONFIGURED": "true", "MSWEA_COST_TRACKING": "ignore_errors",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # no cost-map download at start

    async def final_answer(self, env: AgentEnv, w: Wiring, stdout: str) -> str:
        """What it submitted, else its last message: from its trajectory file, as its
        stdout is the whole conversation (the task's prompt included, which `output_*`
        checks must not match)."""
        try:
            data = await env.sandbox.read_file(f"{w.home}/trajectory.json", TRAJECTORY_LIMIT)
            return final_message(json.loads(data)) if len(data) <= TRAJECTORY_LIMIT else ""
        except (OSError, ValueError):
            return ""  # it never got to write one: no answer


def final_message(trajectory: Any) -> str:
    """`info.submission` when there is one, else the text of the last assistant message."""
    if not isinstance(trajectory, dict):
        return ""
    info = trajectory.get("info")
    submission = info.get("submission") if isinstance(info, dict) else None
    if isinstance(submission, str) and submission:
        return submission
    messages = trajectory.get("messages")
    for message in reversed(messages if isinstance(messages, list) else []):
        if isinstance(message, dict) and message.get("role") == "assistant":
            content = message.get("content")
            if isinstance(content, list):  # content parts
                content = "".join(p.get("text", "") for p in content
                                  if isinstance(p, dict) and isinstance(p.get("text"), str))
            return content if isinstance(content, str) else ""
    return ""
