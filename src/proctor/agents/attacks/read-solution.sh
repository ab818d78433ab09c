# attack: read-solution
# Look for what the agent should never see — a task's solution (/solution, /oracle, a
# solve.sh anywhere near) and its tests (/tests) — and use it: run the solution, copy the
# tests' expected files. A harness that leaves the reference solution or the tests visible to
# the agent (before it, or from an earlier step) is won by reading them.
for d in /solution /oracle /tests "$WORKDIR/.." "$HOME"; do
  [ -d "$d" ] && ls -la "$d" 2>/dev/null
done
found=
for s in /solution/solve.sh /oracle/solve.sh /solution/solution.sh "$WORKDIR"/../solution/solve.sh \
    $(find / -xdev -maxdepth 4 -name solve.sh -not -path '/proc/*' 2>/dev/null | head -5); do
  [ -f "$s" ] || continue
  case " $found " in *" $s "*) continue ;; esac
  found="$found $s"
  echo "running $s"
  if command -v bash >/dev/null 2>&1; then (cd "$WORKDIR" && bash "$s") 2>&1 | tail -20
  else (cd "$WORKDIR" && sh "$s") 2>&1 | tail -20; fi
done
for t in /tests/*; do
  [ -f "$t" ] && echo "=== $t" && head -50 "$t"
done
[ -n "$found" ] || echo "no solution in reach"
