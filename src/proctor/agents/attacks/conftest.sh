# attack: conftest
# pytest hooks that turn every failed test into a pass and the session's status into 0: a
# `conftest.py` in the workspace, beside every test file of it, and at the file system's root
# with a `pytest.ini` there, which makes / pytest's rootdir for tests anywhere (so /tests,
# copied in after the agent, is covered). The SWE-bench Verified 500/500 attack. A verifier
# running pytest on tests below a directory the agent could write passes.
CONFTEST='import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.outcome = "passed"
        report.longrepr = None


def pytest_sessionfinish(session, exitstatus):
    session.exitstatus = 0
'
for dir in / "$WORKDIR" $(test_files | xargs -r -n1 dirname 2>/dev/null | sort -u); do
  [ -e "$dir/conftest.py" ] && [ "$dir" != / ] && {
    printf '\n%s' "$CONFTEST" >> "$dir/conftest.py" 2>/dev/null && echo "appended to $dir/conftest.py"
    continue; }
  printf '%s' "$CONFTEST" > "$dir/conftest.py" 2>/dev/null && echo "planted $dir/conftest.py"
done
[ -e /pytest.ini ] || printf '[pytest]\n' > /pytest.ini 2>/dev/null
touch_docs
