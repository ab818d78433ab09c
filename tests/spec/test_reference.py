"""docs/spec-reference.md is generated from the models; it must match them."""

from __future__ import annotations

from proctor.spec.reference import reference


def test_committed_reference_matches_the_models(repo):
    committed = (repo / "docs" / "spec-reference.md").read_text()
    assert committed == reference(), (
        "docs/spec-reference.md is stale: run "
        "`.venv/bin/python -m proctor.spec.reference > docs/spec-reference.md`")
