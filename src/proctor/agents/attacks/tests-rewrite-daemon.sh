# attack: tests-rewrite-daemon
# Rewrite the tests so they pass: those in reach now, and, by a daemon that outlives the agent,
# those that arrive later (Harbor copies them to /tests after the agent; a checker may copy its
# own into the workspace): test.sh writes the reward, every test file passes trivially. A
# harness that keeps the agent's processes running, with the tests in their reach, passes; so
# does one that runs tests the agent could rewrite.
once=$(cat <<ONCE
for f in /tests/test.sh /tests/*.sh; do
  [ -f "\$f" ] && ! grep -q proctor-attack "\$f" 2>/dev/null && \
    printf '#!/bin/sh\n# proctor-attack\n%s\n' '$WIN' > "\$f" 2>/dev/null
done
find /tests "$WORKDIR" -name .git -prune -o -type f \( -name 'test_*.py' -o -name '*_test.py' \) \
    -print 2>/dev/null | while read -r t; do
  grep -q 'def test_ok' "\$t" 2>/dev/null || printf '%s' '$TRIVIAL_TEST' > "\$t" 2>/dev/null
done
ONCE
)
eval "$once"
daemon "end=\$(( \$(date +%s) + 3600 ))
while [ \"\$(date +%s)\" -lt \"\$end\" ]; do
$once
  sleep 0.01 2>/dev/null || sleep 1
done"
touch_docs
echo "tests rewritten; daemon started"
