"""What can go wrong in a trial that is not the agent's failure: each fault's text and its
`error_kind` (SPEC §5), in one table, and the exception that carries one to the trial's end."""

from __future__ import annotations

from typing import cast

from proctor.results import ErrorKind

# Trial faults: what happened -> (how it reads in results, its `error_kind`: SPEC §5). None
# of them is the agent's failure, so every one makes the trial `error`, never `fail`, and no
# checks run. The kind comes from where the trial failed, never from the message: `infra`
# (sandbox, services, setup, proctor), `provider` (the model's API, after its retries:
# the agent says so, AgentResult.error_kind), `check` (a check errored: `score`).
FAULTS: dict[str, tuple[str, ErrorKind]] = {
    "service": ("service {name} unavailable: {detail}", "infra"),
    "wait_for": ("service {name} never became ready: `{detail}`", "infra"),
    "workspace": ("could not prepare the workspace: {detail}", "infra"),
    "setup": ("setup command failed: {detail}", "infra"),
    "agent": ("agent error: {detail}", "provider"),
    "limit": ("{detail}", "infra"),
    "unavailable": ("this task cannot run here: {detail}", "infra"),
    "healthcheck": ("the environment never became healthy: `{detail}`", "infra"),
}
ERROR_KINDS = ("infra", "provider", "check")


class TrialFault(Exception):
    def __init__(self, kind: str, error_kind: str | None = None, **kw: str):
        text, self.error_kind = FAULTS[kind]
        # An agent's own (AgentResult.error_kind) is one of ERROR_KINDS too.
        self.error_kind = cast(ErrorKind, error_kind) if error_kind else self.error_kind
        super().__init__(text.format(**kw))
