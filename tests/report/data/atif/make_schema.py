"""Writes harbor-atif.schema.json: the JSON Schema of Harbor's ATIF pydantic models
(harbor.models.trajectories.Trajectory), for tests/report/test_export.py.

The `harbor` package needs Python >= 3.12; its trajectory models need only pydantic. So
they are loaded from the unpacked wheel alone, under a bare `harbor` package that skips the
rest of Harbor (its __init__ imports the whole framework):

    pip download harbor==0.26.0 --no-deps --python-version 3.12 --only-binary=:all: -d /tmp/h
    unzip -q /tmp/h/harbor-0.26.0-py3-none-any.whl -d /tmp/h/x
    .venv/bin/python tests/report/data/atif/make_schema.py /tmp/h/x

The schema keeps what pydantic can say in JSON Schema (fields, types, required, enums,
`extra: forbid`); the models' cross-field validators are restated in test_export.py.
"""

from __future__ import annotations

import importlib
import json
import sys
import types
from pathlib import Path


def load(root: Path) -> type:
    for name in ("harbor", "harbor.models"):
        package = types.ModuleType(name)
        package.__path__ = [str(root.joinpath(*name.split(".")))]
        sys.modules[name] = package
    return importlib.import_module("harbor.models.trajectories").Trajectory


def main() -> None:
    root = Path(sys.argv[1])
    trajectory = load(root)
    schema = trajectory.model_json_schema()
    out = Path(__file__).with_name("harbor-atif.schema.json")
    out.write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")
    print(out)


if __name__ == "__main__":
    main()
