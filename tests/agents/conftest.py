"""The real external agents the tests run, from the install cache ./setup.sh fills.

`need_agent(NAME)` is called by every test that runs one. It never lets a test install from
npm or PyPI in the middle of a run, and never skips where ./setup.sh succeeded:

* in the cache (`$PROCTOR_AGENTS`, by default the repository's `.proctor/agents/`, where
  ./setup.sh installs the pinned versions): used as it is, nothing is downloaded;
* not in the cache, its installer at hand (npm for Claude Code and Codex; pip always):
  installed once, here, for the whole session (a machine where ./setup.sh was not run);
* not in the cache and no npm: skipped, the reason naming the cache and ./setup.sh."""

from __future__ import annotations




