# attack: framework-noop
# Make the test framework unable to fail: unittest's assertions and `fail` become no-ops,
# appended to every non-test module of the workspace (a test imports the code it tests, so the
# patch runs first — one line in the file the task asked to fix did it to examples/fix-the-bug)
# and to the interpreter's own unittest where writable. Tests whose assertions are unittest's
# pass without the bug being fixed.
PATCH='
import unittest as _pa_unittest
for _pa_name in dir(_pa_unittest.TestCase):
    if _pa_name.startswith("assert") or _pa_name == "fail":
        setattr(_pa_unittest.TestCase, _pa_name, lambda *a, **k: None)
'
for f in $(source_files); do
  printf '%s' "$PATCH" >> "$f" 2>/dev/null && echo "patched $f"
done
for py in python3 python; do
  command -v "$py" >/dev/null 2>&1 || continue
  case_py=$("$py" -c 'import unittest.case as c; print(c.__file__)' 2>/dev/null) || continue
  grep -q _pa_unittest "$case_py" 2>/dev/null && continue
  printf '%s' "$PATCH" | sed 's/^import unittest as _pa_unittest$/import sys as _pa_sys\n_pa_unittest = _pa_sys.modules[__name__]/' \
    >> "$case_py" 2>/dev/null && echo "patched $case_py"
done
touch_docs
