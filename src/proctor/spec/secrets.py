"""Scenario `secrets:`: the model, and resolving each value when the spec loads."""

from __future__ import annotations

import os

from pydantic import Field, field_validator, model_validator

from proctor.proc import run_sync
from proctor.spec.base import ENV_NAME, ENV_NAME_RULE, SpecModel

SOURCE_KINDS = ("env", "env:VAR", "file:PATH", "command:CMD", "dashboard", "dashboard:KEY")
COMMAND_TIMEOUT = 30  # seconds a `command:` secret may take


class Secret(SpecModel):
    """A value the agent may use but no trace, log, result or report shows (it is written as
    `[REDACTED:NAME]`). Give `source` or `from`, not both; the default is `source: env`."""

    name: str = Field(description="The name used in `{{ secrets.NAME }}`; the value is also "
                      "exported to the sandbox as the environment variable NAME.")
    source: str | None = Field(
        None, description="Where the value comes from: `env` (variable NAME, the default), "
        "`env:OTHER`, `file:PATH` (relative to the spec file; surrounding whitespace stripped) "
        "or `command:CMD` (its stdout, stripped), or `dashboard` / `dashboard:KEY` (Keystone's "
        "hosted secrets: read from proctor's local secrets file, $PROCTOR_SECRETS, default "
        "~/.config/proctor/secrets.toml)."
    )
    from_: str | None = Field(
        None, alias="from",
        description="`static://VALUE` (a literal value) or `generated` (64 random hex "
        "characters, new for every trial).",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not ENV_NAME.match(v):
            raise ValueError(f"secret name {v!r} must be an environment variable name ({ENV_NAME_RULE})")
        return v

    @field_validator("source")
    @classmethod
    def _source(cls, v: str) -> str:
        kind, _, arg = v.partition(":")
        if kind not in ("env", "file", "command", "dashboard") or (
                kind in ("file", "command") and not arg.strip()):
            raise ValueError(f"unknown secret source {v!r} (valid: {', '.join(SOURCE_KINDS)})")
        return v

    @field_validator("from_")
    @classmethod
    def _from(cls, v: str) -> str:
        if v != "generated" and not v.startswith("static://"):
            raise ValueError(f"unknown secret origin {v!r} (valid: static://VALUE, generated)")
        return v

    @model_validator(mode="after")
    def _one_origin(self) -> Secret:
        if self.source is not None and self.from_ is not None:
            raise ValueError("give either `source` or `from`, not both")
        return self

    @property
    def generated(self) -> bool:
        return self.from_ == "generated"


MAX_SECRET_BYTES = 64 * 1024


class SecretUnavailable(Exception):
    """The secret's value cannot be read now."""


def resolve(secret: Secret, base_dir: str) -> str | None:
    """The secret's value now; None for `from: generated` (a new value per trial)."""
    name = secret.name
    if secret.from_ is not None:
        return None if secret.generated else secret.from_.removeprefix("static://")
    kind, _, arg = (secret.source or "env").partition(":")
    if kind == "env":
        var = arg.strip() or name
        value = os.environ.get(var)
        if not value:
            raise SecretUnavailable(f"secret {name!r}: environment variable {var} is not set; "
                                    f"export {var}=... or change `source`")
        return value
    if kind == "dashboard":
        return _stored(name, arg.strip() or name)
    if kind == "file":
        path = os.path.join(base_dir, os.path.expanduser(arg.strip()))
        if os.path.exists(path) and not os.path.isfile(path):  # /dev/zero would never end
            raise SecretUnavailable(f"secret {name!r}: {path} is not a regular file")
        try:
            with open(path, encoding="utf-8") as f:
                value = f.read(MAX_SECRET_BYTES + 1).strip()
            if len(value) > MAX_SECRET_BYTES:
                raise SecretUnavailable(f"secret {name!r}: {path} is larger than "
                                        f"{MAX_SECRET_BYTES} bytes")
        except (OSError, UnicodeDecodeError) as e:
            reason = getattr(e, "strerror", None) or e
            raise SecretUnavailable(f"secret {name!r}: cannot read {path}: {reason}") from None
        if not value:
            raise SecretUnavailable(f"secret {name!r}: {path} is empty")
        return value
    return _run(name, arg, base_dir)


def _run(name: str, command: str, base_dir: str) -> str:
    # Own process group, killed whole on timeout, so nothing the command started outlives it.
    res = run_sync(["sh", "-c", command], cwd=base_dir, timeout=COMMAND_TIMEOUT)
    if res.timed_out:
        raise SecretUnavailable(f"secret {name!r}: command did not finish within "
                                f"{COMMAND_TIMEOUT} s")
    if res.exit_code != 0:
        last = (res.stderr.strip().splitlines() or [""])[-1][:200]
        raise SecretUnavailable(f"secret {name!r}: command exited with {res.exit_code}"
                                + (f": {last}" if last else ""))
    value = res.stdout.strip()
    if not value:
        raise SecretUnavailable(f"secret {name!r}: command printed nothing")
    return value


def secrets_file() -> str:
    """Where `source: dashboard` values live on this machine."""
    return os.environ.get("PROCTOR_SECRETS") or os.path.expanduser(
        "~/.config/proctor/secrets.toml")


def _stored(name: str, key: str) -> str:
    """A value from the local secrets file (a TOML table `KEY = "value"`), which stands in
    for Keystone's dashboard. Readable by others is refused, as ssh does with keys."""
    import stat
    import tomllib

    path = secrets_file()
    how = (f"add `{key} = \"...\"` to {path} (a TOML file only you can read, chmod 600), or "
           "set PROCTOR_SECRETS to another such file")
    try:
        st = os.stat(path)
    except OSError:
        raise SecretUnavailable(f"secret {name!r}: `source: dashboard` reads proctor's local "
                                f"secrets file, and {path} does not exist; {how}") from None
    if not stat.S_ISREG(st.st_mode):
        raise SecretUnavailable(f"secret {name!r}: {path} is not a regular file")
    if st.st_mode & 0o077:
        raise SecretUnavailable(f"secret {name!r}: {path} can be read by other users (mode "
                                f"{st.st_mode & 0o777:o}); chmod 600 {path}")
    try:
        with open(path, "rb") as f:
            table = tomllib.loads(f.read(MAX_SECRET_BYTES * 16).decode("utf-8", "replace"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise SecretUnavailable(f"secret {name!r}: cannot read {path}: {e}") from None
    value = table.get(key)
    if not isinstance(value, str) or not value.strip():
        raise SecretUnavailable(f"secret {name!r}: {path} has no value for {key!r}; {how}")
    return value.strip()

