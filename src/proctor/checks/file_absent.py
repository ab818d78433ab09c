"""`file_absent` — the path does not exist."""

from __future__ import annotations

import os

from pydantic import Field

from proctor.checks._common import kind_of, render_text
from proctor.checks.base import CheckConfig, CheckContext, CheckType, cut
from proctor.model import CheckOutcome


class Config(CheckConfig):
    path: str = Field(description="File or directory; relative paths are inside the workspace.")


async def evaluate(cfg: Config, ctx: CheckContext) -> CheckOutcome:
    path = ctx.resolve(render_text(ctx, cfg.path))
    # lexists: a dangling symlink is still something left at that path.
    if not os.path.lexists(path):
        return CheckOutcome(passed=True, message=f"{cfg.path} does not exist")
    if path.is_symlink() and not path.exists():
        what = f"a dangling symlink to {os.readlink(path)}"
    elif path.is_dir():
        try:
            names = sorted(os.listdir(path))
        except OSError:
            names = []
        listing = cut(", ".join(n + ("/" if (path / n).is_dir() else "") for n in names))
        what = f"a directory holding: {listing}" if names else "an empty directory"
    else:
        try:
            size = f", {path.stat().st_size} bytes"
        except OSError:
            size = ""
        what = f"a {kind_of(path)}{size}"
    return CheckOutcome(passed=False, message=f"{cfg.path} exists ({what})")


CHECK = CheckType(
    name="file_absent",
    summary="the path does not exist",
    config=Config,
    evaluate=evaluate,
    invariant=True,
)
