"""No silent skips (tests/support/skip_policy.hpp): every skipped test is listed with its reason
at the end of the run (pytest -rs does too), and with SYMMCOMM_ALLOWED_SKIPS set ('|'-separated
texts) a skip whose reason contains none of them fails the session."""
import os

_SKIPS = []


def _allowed():
    value = os.environ.get("SYMMCOMM_ALLOWED_SKIPS")
    if value is None:
        return None
    return [a for a in value.split("|") if a]


def _record(report):
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _SKIPS.append((report.nodeid, reason))


def pytest_runtest_logreport(report):
    _record(report)


def pytest_collectreport(report):
    _record(report)  # a module that skips as a whole (no GPU for PyTorch)


def pytest_sessionfinish(session, exitstatus):
    allowed = _allowed()
    if allowed is None or not _SKIPS:
        return
    unexpected = [(n, r) for n, r in _SKIPS if not any(a in r for a in allowed)]
    if unexpected:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    if not _SKIPS:
        return
    allowed = _allowed()
    terminalreporter.write_line("Skipped tests (%d):" % len(_SKIPS))
    for name, reason in _SKIPS:
        bad = allowed is not None and not any(a in reason for a in allowed)
        terminalreporter.write_line("  %s%s: %s" % ("UNEXPECTED SKIP " if bad else "", name, reason))
