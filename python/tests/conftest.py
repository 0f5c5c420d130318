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


def _mapped(names):
    """The files of this process whose name contains one of `names` (Linux: /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/" in line}
    except OSError:
        return []
    return sorted(p for p in paths if any(n in p.rsplit("/", 1)[-1] for n in names))


def pytest_terminal_summary(terminalreporter):
    # Which NCCL and C++ runtime the run used: PyTorch's wheel brings its own libnccl, and the
    # first one loaded serves both PyTorch and symmcomm.
    libraries = _mapped(("libnccl", "libstdc++", "libsymmcomm"))
    if libraries:
        terminalreporter.write_line("Libraries in this process: " + ", ".join(libraries))
    if not _SKIPS:
        return
    allowed = _allowed()
    terminalreporter.write_line("Skipped tests (%d):" % len(_SKIPS))
    for name, reason in _SKIPS:
        bad = allowed is not None and not any(a in reason for a in allowed)
        terminalreporter.write_line("  %s%s: %s" % ("UNEXPECTED SKIP " if bad else "", name, reason))
