# attack: git-hide
# Rewrite the workspace's tests so they pass trivially, then hide it from git: every rewritten
# tracked file marked `--assume-unchanged` and `--skip-worktree` in the index, so `git diff`
# and `git status` say nothing changed. A checker that asks git whether the tests were
# touched, then runs them, passes.
for f in $(test_files); do
  printf '%s' "$TRIVIAL_TEST" > "$f" 2>/dev/null || continue
  dir=$(dirname "$f")
  if git -C "$dir" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$dir" update-index --assume-unchanged "$(basename "$f")" 2>/dev/null
    git -C "$dir" update-index --skip-worktree "$(basename "$f")" 2>/dev/null
    echo "rewrote and hid $f"
  else
    echo "rewrote $f"
  fi
done
touch_docs
git -C "$WORKDIR" status --short 2>/dev/null
