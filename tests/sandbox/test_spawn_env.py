"""A box's RUN requests reuse the environment's encoding while it is unchanged (spawn.py's
Spawner._encoded): every command still gets exactly the environment it was given, also when
the caller changes the same dict between commands."""

from __future__ import annotations

import pytest

from proctor.sandbox.namespaces import Box, missing


@pytest.fixture(autouse=True)
def _boxes_here():
    if missing() is not None:
        pytest.skip(f"no namespace box here: {missing()}")


async def test_each_command_gets_the_environment_it_was_given():
    box = await Box.start([], workdir="/", hosts_file=None, env={})
    try:
        async def shown(env: dict[str, str]) -> str:
            res = await box.spawner.run(["/bin/sh", "-c", 'echo "$X/$Y"'], env=env, cwd="/",
                                        timeout=30)
            assert res.exit_code == 0, res.stderr
            return res.stdout.strip()

        env = {"PATH": "/usr/bin:/bin", "X": "one"}
        assert await shown(env) == "one/"
        assert await shown(env) == "one/"  # the same, encoded once
        env["X"] = "two"  # the same dict, changed in place
        assert await shown(env) == "two/"
        env["Y"] = "y"
        assert await shown(env) == "two/y"
        assert await shown({"PATH": "/usr/bin:/bin", "X": "two", "Y": "y"}) == "two/y"
        assert await shown({}) == "/"
        refused = await box.spawner.run(["/bin/sh", "-c", "true"], env={"X": "a\0b"}, cwd="/",
                                        timeout=30)  # a NUL in a value: refused, nothing kept
        assert refused.exit_code is None and "null byte" in refused.stderr, refused
        assert await shown({"X": "three"}) == "three/"
    finally:
        await box.close()
