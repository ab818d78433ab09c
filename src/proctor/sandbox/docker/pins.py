"""Package versions pinned for the image a stand-in replaces (`apt-get install
wget=1.21.4-1ubuntu4.1` on Ubuntu 24.04) meet a Debian release that never had them.

Every stand-in (imagemap.py) has `apt-get` and `apt` wrapped (in /usr/local/sbin, first on
PATH): an `install` argument `NAME=VERSION` whose version the stand-in's release does not
have is named, with the image map, before apt fails on it. Where proctor.toml relaxes pins
(`relax_pins = true`, or a list of task ids and globs), `PROCTOR_RELAX_PINS=1` is in the
build's and the trial's environment, and the wrapper installs the release's own version of
NAME instead, saying so: a deviation from the upstream image, on purpose and visible.
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from proctor.config import ProctorConfig

VAR = "PROCTOR_RELAX_PINS"
PATHS = ("/usr/local/sbin/apt-get", "/usr/local/sbin/apt")

# POSIX sh: the stand-in's /bin/sh is dash. @SUITE@ is the stand-in's Debian release.
WRAPPER = r"""#!/bin/sh
# proctor's Debian @SUITE@ stand-in: apt with versions pinned for another distribution named
# (docs/harbor.md#pinned-package-versions). The real one: /usr/bin/$(basename $0).
real=/usr/bin/$(basename "$0")
case " $* " in *" install "*) ;; *) exec "$real" "$@" ;; esac
n=$#
while [ "$n" -gt 0 ]; do
  a=$1; shift; n=$((n - 1))
  case "$a" in
    -*|*'*'*) ;;
    *=*)
      name=${a%%=*}; want=${a#*=}
      if printf '%s\n' "$name" | grep -qE '^[a-z0-9][a-z0-9+.-]*(:[a-z0-9-]+)?$'; then
        have=$(apt-cache madison "$name" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}')
        if [ -n "$have" ] && ! printf '%s\n' "$have" | grep -qxF -- "$want"; then
          if [ "${PROCTOR_RELAX_PINS:-}" = 1 ]; then
            echo "proctor: $a: Debian @SUITE@ has no such version; installing its own $name (relax_pins in proctor.toml: a deviation from the upstream image)" >&2
            a=$name
          else
            echo "proctor: $a: a version pinned for another distribution; this image is proctor's Debian @SUITE@ stand-in (the image map, docs/harbor.md#the-image-map), which has $name $(printf '%s' "$have" | head -n 1); relax_pins in proctor.toml installs that instead" >&2
          fi
        fi
      fi ;;
  esac
  set -- "$@" "$a"
done
exec "$real" "$@"
"""


def wrapper(suite: str, distro: str = "Debian") -> str:
    """The wrapper for a stand-in of `distro` `suite`. On Ubuntu's own release a pinned
    version that is missing is one its archive has replaced (an update), not another
    distribution's."""
    text = WRAPPER
    if distro != "Debian":  # (Debian's text unchanged: its stand-ins' digests stay)
        text = text.replace("Debian @SUITE@", f"{distro} @SUITE@").replace(
            "a version pinned for another distribution", "a version the archive no longer has")
    return text.replace("@SUITE@", suite)


def relaxed(task_id: str, config: ProctorConfig | None) -> bool:
    """Whether proctor.toml's `relax_pins` covers this task (true: every task; a list: those
    ids, globs allowed)."""
    value = config.relax_pins if config is not None else False
    if isinstance(value, bool):
        return value
    return any(fnmatch.fnmatchcase(task_id, p) for p in value)
