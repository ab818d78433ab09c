"""`services:` declarations (both dialects): models, cross-checks, and ServiceDef building."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from proctor.model import ServiceDef
from proctor.spec.base import EnvMap, SpecModel
from proctor.spec.diagnostics import Issues, suggest
from proctor.spec.yamlpos import Doc, Path, locate

SERVICE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "*")


class Route(SpecModel):
    """One canned response of an `http_mock` service."""

    method: str = Field("GET", description="HTTP method (any case), or `*` for any method.")
    path: str = Field(description="Request path to answer, e.g. `/api/messages`.")
    status: int = Field(200, ge=100, le=599, description="HTTP status code of the response.")
    response: str | dict[str, Any] | list[Any] | None = Field(
        None, description="Response body: a string is sent as is, a mapping or list as JSON."
    )
    headers: dict[str, str] = Field({}, description="Response headers.")

    @field_validator("method")
    @classmethod
    def _method(cls, v: str) -> str:
        if v.upper() not in HTTP_METHODS:
            raise ValueError(f"unknown HTTP method {v!r}{suggest(v.upper(), HTTP_METHODS)} "
                             f"(valid: {', '.join(HTTP_METHODS)})")
        return v.upper()

    @field_validator("path")
    @classmethod
    def _path(cls, v: str) -> str:
        if not v.startswith("/"):
            raise ValueError(f"a route path starts with '/': write '/{v}'")
        return v


class Service(SpecModel):
    """A backing service the agent can reach: a real database, a built-in HTTP mock, or (docker
    backend) any container image. Needs `type` or `image`."""

    name: str = Field(
        description="Unique name: the host alias, and the prefix of injected variables "
        "(e.g. `NAME_URL`). Letters, digits, `-` and `_`, starting with a letter.",
        json_schema_extra={"pattern": SERVICE_NAME.pattern},
    )
    type: Literal["postgres", "mysql", "http_mock"] | None = Field(
        None, description="Built-in kind. Without it, `image` decides: postgres*, mysql*/mariadb*, "
        "else a plain container (docker backend only)."
    )
    image: str | None = Field(None, description="Container image (docker backend), e.g. `postgres:16`.")
    seed: str | None = Field(
        None, description="SQL run once to build the template database: a `.sql` file path "
        "(relative to the spec file) or inline SQL."
    )
    routes: list[Route] = Field([], description="http_mock: canned responses.")
    record: bool = Field(False, description="http_mock: record requests (needed by "
                         "`http_mock_assertions` and `llm_as_judge` input from this service).")
    default_response: int = Field(404, ge=100, le=599,
                                  description="http_mock: status for requests no route matches.")
    wait_for: str | None = Field(
        None, description="Shell command retried in the sandbox until it exits 0 (timeout 60 s) "
        "before the agent starts."
    )
    env: EnvMap = Field({}, description="Environment of the service container.")
    ports: list[int] = Field([], description="Container services: the TCP ports it listens on "
                             "(default: the image's EXPOSE'd ports); the first is `NAME_PORT`.")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not SERVICE_NAME.match(v):
            raise ValueError(f"service name {v!r} must be letters, digits, '-' and '_', starting "
                             "with a letter (it becomes a host name and NAME_URL)")
        return v

    @model_validator(mode="after")
    def _shape(self) -> Service:
        if self.type is None and not self.image:
            raise ValueError(f"service {self.name!r} needs `type: postgres|mysql|http_mock` or an "
                             "`image:` to run")
        if self.type == "http_mock" and self.image:
            raise ValueError("http_mock is built in: remove `image`")
        kind = self.kind
        if kind != "http_mock":
            extra = [k for k in ("routes", "record", "default_response") if k in self.model_fields_set]
            if extra:
                raise ValueError(f"{', '.join(extra)} only apply to `type: http_mock` (this is {kind})")
        if kind != "container" and self.ports:
            raise ValueError(f"`ports` only applies to image services (this is {kind})")
        if any(not 0 < p < 65536 for p in self.ports):
            raise ValueError("`ports` are TCP port numbers, 1 to 65535")
        if kind not in ("postgres", "mysql") and self.seed is not None:
            raise ValueError(f"`seed` only applies to postgres and mysql services (this is {kind})")
        return self

    @property
    def kind(self) -> Literal["postgres", "mysql", "http_mock", "container"]:
        return self.type or image_kind(self.image or "")


def image_kind(image: str) -> Literal["postgres", "mysql", "container"]:
    repo = image.rsplit("/", 1)[-1].lower()
    if repo.startswith("postgres"):
        return "postgres"
    if repo.startswith(("mysql", "mariadb")):
        return "mysql"
    return "container"


@dataclass
class Declared:
    """What other parts of a spec may rely on about a service, read from the raw data so that a
    broken service entry does not also make every check that names it an error."""

    kind: str
    record: bool
    path: Path


def declared(raw: Any, prefix: Path) -> dict[str, Declared]:
    out: dict[str, Declared] = {}
    for i, entry in enumerate(raw if isinstance(raw, list) else []):
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            kind = entry.get("type") or image_kind(str(entry.get("image") or ""))
            out.setdefault(entry["name"], Declared(str(kind), entry.get("record") is True, (*prefix, i)))
    return out


def check_names(issues: Issues, doc: Doc, raw: Any, prefix: Path) -> None:
    """Unique names; warn that container services need the docker backend."""
    seen: dict[str, int] = {}
    for i, entry in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(entry, dict):
            continue
        name = entry.get("name")
        if isinstance(name, str):
            if name in seen:
                line, _ = locate(doc.root, (*prefix, seen[name], "name"))
                issues.error(doc, (*prefix, i, "name"),
                             f"duplicate service name {name!r} (first at line {line}); rename one")
            seen.setdefault(name, i)
        if not entry.get("type") and isinstance(entry.get("image"), str) \
                and image_kind(entry["image"]) == "container":
            issues.warn(doc, (*prefix, i, "image"), f"service {name!r} runs image "
                        f"{entry['image']!r}: this needs `--backend docker`",
                        moot_with="docker")


def service_defs(issues: Issues, doc: Doc, raw: Any, prefix: Path) -> list[ServiceDef]:
    """ServiceDefs of the valid entries (the dialect's model reports the invalid ones)."""
    out = []
    for i, entry in enumerate(raw if isinstance(raw, list) else []):
        try:
            svc = Service.model_validate(entry)
        except ValidationError:
            continue
        config = svc.model_dump(exclude={"name", "seed"})
        if svc.seed is not None:
            config.update(_seed(issues, doc, svc.seed, (*prefix, i, "seed")))
        out.append(ServiceDef(name=svc.name, kind=svc.kind, config=config))
    return out


MAX_SEED_BYTES = 512 * 1024 * 1024


def _seed(issues: Issues, doc: Doc, seed: str, path: Path) -> dict[str, Any]:
    """A seed naming a file becomes `seed_file` (absolute); anything else is inline SQL, kept with
    where it was written so a later SQL error can point there."""
    text = seed.strip()
    if "\n" not in text:
        candidate = os.path.join(doc.base_dir, text)
        if os.path.isfile(candidate):
            if os.path.getsize(candidate) > MAX_SEED_BYTES:
                issues.error(doc, path, f"seed file {text!r} is larger than {MAX_SEED_BYTES} bytes")
                return {}
            return {"seed_file": os.path.abspath(candidate)}
        path_like = not any(c in text for c in " ;") and ("/" in text or
                                                          text.lower().endswith(".sql"))
        if path_like and os.path.exists(candidate):
            issues.error(doc, path, f"seed {text!r} is not a regular file; give a .sql file or "
                         "write the SQL inline")
            return {}
        if path_like:
            issues.error(doc, path, f"seed file {text!r} not found (looked in {doc.base_dir}); "
                         "fix the path or write the SQL inline")
            return {}
    line, col = locate(doc.root, path)
    return {"seed_sql": seed, "seed_origin": f"{doc.file}:{line}:{col}"}
