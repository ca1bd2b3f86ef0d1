# SPDX-License-Identifier: MIT
"""pytest plugin of scripts/torch-suite.sh (loaded with -p suite_plugin).

Writes one line per test to $VNPU_SUITE_PROGRESS as it happens ("start
ID", then "passed|failed|skipped ID<TAB>message"), flushed at once, so
that when a test kills the process the runner knows which one did it and
can run the rest in a new process. A test still running after
$VNPU_SUITE_TEST_TIMEOUT seconds is a hang: faulthandler writes
"Timeout (...)" and every thread's stack into the progress file (pytest
captures stderr) and ends the process, and the runner reports it.

Which tests run: not those in the file $VNPU_SUITE_DESELECT (already
reported by an earlier process); with $VNPU_SUITE_SAMPLE=K only one in K,
chosen by a hash of the test id (the same ones on every machine); and of
an OpInfo-parametrized class named in $VNPU_SUITE_OPINFO_CLASSES, only the
tests of the OpInfos listed in the file $VNPU_SUITE_OPINFOS.
"""
import faulthandler
import gc
import os
import re
import sys
import zlib

import pytest

_progress = None
_timeout = float(os.environ.get('VNPU_SUITE_TEST_TIMEOUT', '0') or 0)
_failed = False


def _ids(var):
    path = os.environ.get(var)
    if not path:
        return None
    with open(path) as f:
        return {line.rstrip('\n') for line in f if line.strip()}


def _emit(line):
    _progress.write(line.replace('\n', ' ') + '\n')
    _progress.flush()


def pytest_configure(config):
    global _progress
    _progress = open(os.environ['VNPU_SUITE_PROGRESS'], 'a', buffering=1)


class _OpInfoFilter:
    """Whether an instantiated @ops test (test_<name>_<op>_<device>[_dtype])
    is of one of the chosen OpInfos: the op is the longest formatted OpInfo
    name its name ends with, so that masked_sum is not taken for sum.
    PyTorch's Python references (_refs.*) are not ours: their tests are
    left out."""

    def __init__(self, chosen):
        from torch.testing._internal.common_methods_invocations import \
            op_db, python_ref_db
        self.chosen = chosen
        # the _refs OpInfos too, so that _refs_clamp is not taken for clamp
        self.names = sorted({o.formatted_name for o in op_db + python_ref_db},
                            key=len, reverse=True)

    def __call__(self, test_name):
        m = re.match(r'test_(.+)_npu(_\w+)?$', test_name)
        if not m:
            return False
        for name in self.names:
            if m.group(1).endswith('_' + name):
                return name in self.chosen
        return False


def _wanted(item, skip, sample, opinfo_classes, opinfo_filter):
    if item.nodeid in skip:
        return False
    if sample > 1 and zlib.crc32(item.nodeid.encode()) % sample:
        return False
    cls = item.cls.__name__ if item.cls else ''
    if any(cls == c + 'PRIVATEUSE1' for c in opinfo_classes):
        return opinfo_filter(item.name)
    return True


def pytest_collection_modifyitems(session, config, items):
    skip = _ids('VNPU_SUITE_DESELECT') or set()
    sample = int(os.environ.get('VNPU_SUITE_SAMPLE', '1') or 1)
    opinfo_classes = os.environ.get('VNPU_SUITE_OPINFO_CLASSES', '').split()
    opinfo_filter = None
    if opinfo_classes:
        opinfo_filter = _OpInfoFilter(_ids('VNPU_SUITE_OPINFOS') or set())
    keep, drop = [], []
    for item in items:
        if _wanted(item, skip, sample, opinfo_classes, opinfo_filter):
            keep.append(item)
        else:
            drop.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_runtest_logstart(nodeid, location):
    _emit('start ' + nodeid)
    if _timeout > 0:
        faulthandler.dump_traceback_later(_timeout, exit=True,
                                          file=_progress)


def pytest_runtest_logfinish(nodeid, location):
    global _failed
    if _timeout > 0:
        faulthandler.cancel_dump_traceback_later()
    if _failed:
        # pytest keeps a failed test's traceback in sys.last_traceback for
        # post-mortem debugging, and with it the test's frames and their
        # tensors: device memory the next test would run out of
        sys.last_type = sys.last_value = sys.last_traceback = None
        gc.collect()
        _failed = False


def _message(report):
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    crash = getattr(report.longrepr, 'reprcrash', None)
    if crash is not None:
        return crash.message
    return str(report.longrepr or '')[:2000]


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    # one verdict per test: a failure or skip in setup, else the call's
    # outcome; an error in teardown after a pass is a failure
    if report.when == 'setup' and report.outcome == 'passed':
        return
    if report.when == 'teardown' and report.outcome == 'passed':
        return
    global _failed
    outcome = report.outcome
    if report.when == 'teardown':
        outcome = 'failed'
    _failed |= outcome == 'failed'
    _emit('%s %s\t%s' % (outcome, report.nodeid, _message(report)[:2000]))


def pytest_sessionfinish(session, exitstatus):
    _emit('finished %d' % int(exitstatus))
