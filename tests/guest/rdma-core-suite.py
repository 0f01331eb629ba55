#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
"""Run rdma-core's test suite (its tests/ folder, pyverbs) on one device
and print one machine-readable line per test.

Usage: rdma-core-suite.py TESTS_DIR --dev DEV [TEST_ID...]

TESTS_DIR is rdma-core's tests/ folder (the one run_tests.py lives in). The
arguments after it go to rdma-core's own argument parser, as with
run_tests.py; TEST_IDs (e.g. tests.test_mr.MRTest.test_reg_mr) narrow the
run. Each test ends in a line

  RESULT <ok|skip|fail|error|xfail|xpass> <seconds> <test id> [reason]

and the run in

  SUMMARY ok=N skip=N fail=N error=N xfail=N xpass=N seconds=S

The tracebacks of failures and errors follow the summary, as unittest
prints them.
"""
import os
import sys
import time
import unittest
from importlib.machinery import SourceFileLoader


class LineResult(unittest.TextTestResult):
    """unittest's text result, plus one RESULT line per test."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.counts = dict.fromkeys(
            ('ok', 'skip', 'fail', 'error', 'xfail', 'xpass'), 0)
        self._t0 = time.monotonic()
        self.report = None

    def startTest(self, test):
        self._t0 = time.monotonic()
        super().startTest(test)

    def _line(self, test, status, reason=''):
        self.counts[status] += 1
        tid = test.id().replace(' ', '')
        reason = ' '.join(str(reason).split())[:200]
        self.stream.write(f'RESULT {status} {time.monotonic() - self._t0:.1f} '
                          f'{tid} {reason}'.rstrip() + '\n')
        self.stream.flush()
        if self.report:
            self.report.write(f'{status} {tid}\n')
            self.report.flush()

    def addSuccess(self, test):
        super().addSuccess(test)
        self._line(test, 'ok')

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._line(test, 'skip', reason)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._line(test, 'fail', err[1])

    def addError(self, test, err):
        super().addError(test, err)
        # A setUpClass/module error has no test of its own.
        self._line(test, 'error', f'{err[0].__name__}: {err[1]}')

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._line(test, 'xfail')

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._line(test, 'xpass')


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    tests_dir = os.path.abspath(sys.argv[1])
    # rdma-core's modules import args_parser from the folder itself and
    # each other as the package "tests".
    sys.path.insert(0, tests_dir)
    sys.argv = [os.path.join(tests_dir, 'run_tests.py')] + sys.argv[2:]
    from args_parser import parser
    parser.parse_args()          # leaves the test names in sys.argv[1:]
    names = [a for a in sys.argv[1:] if not a.startswith('-')]
    pkg = SourceFileLoader('tests', os.path.join(tests_dir, '__init__.py')).load_module()
    loader = unittest.TestLoader()
    if names:
        suite = loader.loadTestsFromNames(names)
    else:
        suite = loader.loadTestsFromModule(pkg)
    t0 = time.monotonic()
    counts = dict.fromkeys(('ok', 'skip', 'fail', 'error', 'xfail', 'xpass'), 0)
    # Each module in a process of its own: a test that kills the process
    # (a provider's segfault) is an error, the rest of its module runs on.
    for group in by_module(suite):
        todo = list(group)
        while todo:
            done, sig = run_child(todo, counts)
            todo = [t for t in todo if t.id().replace(' ', '') not in done]
            if sig and todo:  # -1: the child exited early
                crashed = todo.pop(0)
                counts['error'] += 1
                print(f'RESULT error 0.0 {crashed.id()} the test process died '
                      f'(signal {sig})', flush=True)
            elif not sig:
                break
    print('SUMMARY ' + ' '.join(f'{k}={v}' for k, v in counts.items()) +
          f' seconds={time.monotonic() - t0:.0f}', flush=True)
    sys.exit(0 if counts['fail'] + counts['error'] + counts['xpass'] == 0 else 1)


def flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from flatten(t)
        else:
            yield t


def by_module(suite):
    groups = {}
    for t in flatten(suite):
        groups.setdefault(type(t).__module__, []).append(t)
    return groups.values()


def run_child(tests, counts):
    """Run tests in a child; the ids it finished and the signal it died of."""
    rfd, wfd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        report = os.fdopen(wfd, 'w')

        def result(*args, **kwargs):
            r = LineResult(*args, **kwargs)
            r.report = report
            return r
        runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=0,
                                         resultclass=result)
        runner.run(unittest.TestSuite(tests))
        sys.stdout.flush()
        report.close()
        os._exit(0)
    os.close(wfd)
    done = set()
    with os.fdopen(rfd) as r:
        for line in r:
            status, tid = line.rstrip('\n').split(' ', 1)
            counts[status] += 1
            done.add(tid)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return done, os.WTERMSIG(status)
    return done, 0 if os.WEXITSTATUS(status) == 0 else -1


if __name__ == '__main__':
    main()
