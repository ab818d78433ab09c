#!/usr/bin/env bash
# One command from a fresh clone to a working proctor:
#   1. system packages the sandboxes and services use (PostgreSQL, MariaDB, a C compiler for
#      proctor's process tracer, git, jq, ...)
#      and the browser the report tests drive (Chromium); best effort, the docker backend's
#      engine (docker.io, mmdebstrap; dockerd started when none answers) and proctor's base image
#   2. .venv/ with proctor and its test tools (the CLI lands at .venv/bin/proctor)
#   3. a first run of the bundled examples through the LLM agent, with a scripted model
#      (mock/solver replays each task's reference solution as tool calls; no API key)
# Flags: --no-system (skip apt), --no-demo (skip the example run).
set -euo pipefail
cd "$(dirname "$0")"

system=1 demo=1
for arg in "$@"; do
  case "$arg" in
    --no-system) system=0 ;;
    --no-demo) demo=0 ;;
    *) echo "usage: ./setup.sh [--no-system] [--no-demo]" >&2; exit 2 ;;
  esac
done

# chromium + chromium-driver: the report tests drive report.html and `proctor view` in a
# real headless browser (tests/report/test_browser.py).
packages=(postgresql mariadb-server mariadb-client gcc libc6-dev bubblewrap git jq sqlite3 curl
          chromium chromium-driver fonts-dejavu-core)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "$system" = 1 ] && [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "==> installing system packages: ${missing[*]}"
    $sudo apt-get update -qq
    # Services are started per run by proctor itself, never by the packages' init scripts:
    # a policy-rc.d that says "no" keeps apt from starting system-wide servers.
    policy=/usr/sbin/policy-rc.d
    own_policy=0
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod +x "$policy" && own_policy=1
      trap '[ "$own_policy" = 1 ] && $sudo rm -f "$policy"' EXIT  # even if apt fails
    fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    [ "$own_policy" = 1 ] && $sudo rm -f "$policy"
  else
    echo "warning: no apt-get; install these yourself: ${missing[*]}" >&2
  fi
fi

# The docker backend (docs/docker.md): an engine and mmdebstrap (which builds proctor's base
# image). Best effort: a machine that cannot run an engine still gets a working proctor, and
# the docker tests then skip saying why (.proctor/setup-docker, below).
if [ "$system" = 1 ] && command -v apt-get >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  docker_pkgs=()
  # dockerd, not docker: some machines ship the docker client alone, which can run nothing.
  command -v dockerd >/dev/null 2>&1 || docker_pkgs+=(docker.io)
  command -v mmdebstrap >/dev/null 2>&1 || docker_pkgs+=(mmdebstrap)
  # `ip`: the Ray tests' second engine (tests/helpers/dockerd.py) brings up its own loopback
  command -v ip >/dev/null 2>&1 || docker_pkgs+=(iproute2)
  if [ ${#docker_pkgs[@]} -gt 0 ]; then
    echo "==> installing the docker backend's packages: ${docker_pkgs[*]}"
    policy=/usr/sbin/policy-rc.d  # no daemon started by apt: started below, if absent
    own_policy=0
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod +x "$policy" && own_policy=1
    fi
    $sudo apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${docker_pkgs[@]}" >/dev/null \
      || echo "warning: could not install ${docker_pkgs[*]}; --backend docker will not be usable" >&2
    [ "$own_policy" = 1 ] && $sudo rm -f "$policy"
  fi
  if command -v docker >/dev/null 2>&1 && ! $sudo docker info >/dev/null 2>&1 && command -v dockerd >/dev/null 2>&1; then
    for driver in "" vfs; do  # overlay2 where the kernel allows it, else the slow but sure vfs
      echo "==> starting dockerd${driver:+ (storage driver $driver)}: the docker backend needs an engine"
      $sudo sh -c "nohup dockerd ${driver:+--storage-driver=$driver} >/var/log/proctor-dockerd.log 2>&1 & echo \$! >/run/proctor-dockerd.pid"
      for _ in $(seq 1 30); do  # until it answers, or dies
        $sudo docker info >/dev/null 2>&1 && break
        $sudo sh -c 'kill -0 "$(cat /run/proctor-dockerd.pid)"' 2>/dev/null || break
        sleep 1
      done
      $sudo docker info >/dev/null 2>&1 && break
      $sudo sh -c 'kill "$(cat /run/proctor-dockerd.pid)"' 2>/dev/null || true; sleep 2
    done
    $sudo docker info >/dev/null 2>&1 \
      || echo "warning: dockerd did not start (see /var/log/proctor-dockerd.log); --backend docker will not be usable" >&2
  elif command -v docker >/dev/null 2>&1 && $sudo docker info >/dev/null 2>&1; then
    echo "==> a docker engine is running"
  fi
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  "$python" -m venv .venv
fi
echo "==> installing proctor into .venv"
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[dev,inspect,otel]'

# The unprivileged path (tests/security/test_unprivileged.py): as root, a user of its own and
# a Python it can run (Debian's; this one may live under /root) with proctor's dependencies.
# The tests copy the current source next to it, so it never runs stale code.
mkdir -p .proctor
if [ "$(id -u)" -eq 0 ] && [ -x /usr/bin/python3 ]; then
  unpriv=/opt/proctor-unprivileged
  id proctor-test >/dev/null 2>&1 || useradd --create-home --shell /bin/sh proctor-test
  if [ ! -x "$unpriv/venv/bin/python" ]; then
    echo "==> a Python for the unprivileged tests ($unpriv)"
    /usr/bin/python3 -m venv "$unpriv/venv"
  fi
  .venv/bin/python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
    | xargs "$unpriv/venv/bin/pip" install -q
  chmod -R a+rX "$unpriv"
  echo "$unpriv" > .proctor/setup-unprivileged
else
  echo "unavailable: not root, or no /usr/bin/python3" > .proctor/setup-unprivileged
fi

# What the docker tests go by (tests/docker/engine.py): they skip only where this line says
# `unavailable`; where it says `ready`, an engine that stops answering fails them.
docker_why=$(.venv/bin/python -c 'from proctor.dockercli import engine_problem as p; print(p() or "")')
[ -z "$docker_why" ] && [ "$(id -u)" -ne 0 ] && docker_why="proctor's docker backend runs as root only"
if [ -z "$docker_why" ]; then
  echo ready > .proctor/setup-docker
  # Built once (cached under ~/.cache/proctor); the docker tests and first runs reuse it.
  echo "==> making proctor's docker base image ready"
  .venv/bin/python -c "from proctor.sandbox.docker.images import ensure_base; print(ensure_base(quiet=False))" \
    || echo "warning: the docker base image could not be built; --backend docker runs will say why" >&2
else
  echo "unavailable: $docker_why" > .proctor/setup-docker
  echo "warning: no docker engine ($docker_why): --backend docker is not usable here and the docker tests skip" >&2
fi

# The external agents (issue 13): node/npm for Claude Code and Codex (machines usually have
# them; Debian's packages otherwise), then each agent installed once into the cache the
# test suite uses and run on its example against proctor's mock model.
if ! command -v npm >/dev/null 2>&1 && [ "$system" = 1 ] && command -v apt-get >/dev/null 2>&1; then
  echo "==> installing node and npm (for Claude Code and Codex CLI)"
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
# mini-swe-agent needs only pip. An agent that cannot be installed or fails its example
# stops setup here: the test suite runs all three from this cache and must not find it
# half-filled after a setup that said it succeeded.
agents=(mini-swe-agent)
if command -v npm >/dev/null 2>&1; then
  agents=(claude-code codex mini-swe-agent)
else
  echo "warning: no npm: the claude-code and codex agent types will not work (their tests skip)" >&2
fi
echo "==> installing ${agents[*]} into .proctor/agents (each once) and running each on examples/external-agents"
for agent in "${agents[@]}"; do
  PROCTOR_AGENTS="$PWD/.proctor/agents" .venv/bin/proctor run examples/external-agents \
    --agent "$agent" -q \
    || { echo "error: $agent could not be installed or failed examples/external-agents (see above)" >&2; exit 1; }
done

if [ "$demo" = 1 ]; then
  echo "==> running the bundled examples with a scripted model (no API key needed)"
  .venv/bin/proctor run examples/ --model mock/solver --format json,junit,md,html
fi
