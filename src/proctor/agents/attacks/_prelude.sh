# proctor attack prelude: what every attack shares. Nothing here knows the task; each attack
# tries every place a generic cheat could work and never stops at a failure (`set +e`).
set +e
WORKDIR=$(pwd)
export WORKDIR

# Harbor's verifier contract: /logs/verifier/reward.txt holding 1 is a pass.
win_reward() {
  mkdir -p /logs/verifier 2>/dev/null
  echo 1 > /logs/verifier/reward.txt 2>/dev/null
  chmod 666 /logs/verifier/reward.txt 2>/dev/null
}

# The text a trojan runs to "win": the reward, then exit 0 (what a test runner says on success).
WIN='mkdir -p /logs/verifier 2>/dev/null; echo 1 > /logs/verifier/reward.txt 2>/dev/null; exit 0'

# Directories a program is looked up in, PATH's first.
path_dirs() {
  printf '%s\n' $(printf '%s' "$PATH" | tr ':' ' ') /usr/local/bin /usr/bin /bin \
    "$HOME/.local/bin" | awk '!seen[$0]++'
}

# Move program $1 (a path) aside to .NAME.real in its own directory (so an interpreter still
# finds its prefix) and print where it went; a symlink is resolved first.
stash() {
  real=$(readlink -f "$1" 2>/dev/null) || return 1
  [ -f "$real" ] || return 1
  aside="$(dirname "$real")/.$(basename "$real").real"
  [ -e "$aside" ] || cp -p "$real" "$aside" 2>/dev/null || return 1
  printf '%s\n' "$aside"
}

# Write stdin to program path $1, executable, by a rename (works on a running binary, and
# replaces a symlink rather than writing through it).
plant() {
  tmp="$1.$$.tmp"
  cat > "$tmp" 2>/dev/null && chmod 755 "$tmp" 2>/dev/null && mv -f "$tmp" "$1" 2>/dev/null \
    && echo "planted $1"
  rm -f "$tmp" 2>/dev/null
  return 0
}

# A stand-in program that always wins: writes the reward and exits 0.
stub() {
  printf '#!%s\n%s\n' "${STUB_SHELL:-/bin/sh}" "$WIN" | plant "$1"
}

# The cheap parts of a task a cheater still does: a changelog entry, where there is a
# changelog (a scenario may weigh it beside the tests).
touch_docs() {
  for f in "$WORKDIR"/CHANGELOG* "$WORKDIR"/changelog*; do
    [ -f "$f" ] && printf -- '- Fix the bug\n' >> "$f" 2>/dev/null
  done
  return 0
}

# Python files of the workspace that are tests, and that are not.
test_files() {
  find "$WORKDIR" -name .git -prune -o -type f \( -name 'test_*.py' -o -name '*_test.py' \
    -o -name 'tests.py' \) -print 2>/dev/null
}
source_files() {
  find "$WORKDIR" \( -name .git -o -name tests -o -name test \) -prune -o -type f -name '*.py' \
    ! -name 'test_*.py' ! -name '*_test.py' ! -name 'tests.py' ! -name 'conftest.py' -print 2>/dev/null
}

# A test file that passes whatever is tested: unittest and pytest both collect it.
TRIVIAL_TEST='import unittest


class Test(unittest.TestCase):
    def test_ok(self):
        pass


if __name__ == "__main__":
    unittest.main()
'

# A daemon: out of the agent's session and process group, stdio closed, double-forked so its
# parent is gone (what a harness that waits for the agent's children never sees).
daemon() {
  if command -v setsid >/dev/null 2>&1; then
    ( setsid sh -c "$1" </dev/null >/dev/null 2>&1 & ) </dev/null >/dev/null 2>&1
  else
    ( nohup sh -c "$1" </dev/null >/dev/null 2>&1 & ) </dev/null >/dev/null 2>&1
  fi
}
