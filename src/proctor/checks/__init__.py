"""Check registry: one module per check type, found by name."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from proctor.registry import Registry

if TYPE_CHECKING:
    from proctor.checks.base import CheckType

# Suite assertions, then scenario invariants, then checks that are both. Adding a check
# type = adding a module + a name here.
MODULES = (
    "exit_code", "output_contains", "output_equals", "error_contains", "file_exists",
    "file_contains", "ran", "not_ran", "run_count", "verify",
    "command_exit", "file_absent", "file_content", "sql", "http_mock_assertions", "custom",
    "llm_as_judge", "reward",
    # both: assertions and invariants over the record (SPEC §2 "Beyond cli-bench")
    "ran_in_order", "tool_used", "budget",
)


CHECKS: Registry[CheckType] = Registry("check", {m: f"proctor.checks.{m}:CHECK" for m in MODULES})


@cache
def registry() -> dict[str, CheckType]:
    """name -> CheckType, every check type (each module's `CHECK`)."""
    return {check.name: check for _, check in CHECKS.items()}


def check_type(name: object) -> CheckType | None:
    """One check type by name, importing its module only (start-up time: a spec's checks,
    not all of them); None for a name no check has."""
    return CHECKS.get(name) if isinstance(name, str) and name in CHECKS else None


def assertion_types() -> dict[str, CheckType]:
    return {n: c for n, c in registry().items() if c.assertion}


def invariant_types() -> dict[str, CheckType]:
    return {n: c for n, c in registry().items() if c.invariant}
