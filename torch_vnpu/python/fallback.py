# SPDX-License-Identifier: MIT
"""The CPU fallback's policy and report, shared with the C dispatcher.

VNPU_FALLBACK=allow|warn|error sets the policy at start-up (allow when
unset); VNPU_FALLBACK_REPORT=1 prints the report when the process exits.
"""
import atexit
import os
import sys

from . import _C


def fallback_report():
    """[(op, calls)] of every op that ran on the CPU, most calls first."""
    return _C.fallback_report()


def rejected_inputs():
    """[(op, calls)] whose input an npu kernel left to PyTorch's CPU kernel,
    which refused it (an error, worded by PyTorch): not fallbacks."""
    return _C.fallback_rejections()


def print_fallback_report(file=None):
    rep = fallback_report()
    calls = sum(c for _, c in rep)
    out = file or sys.stdout
    print('CPU fallback: %d op%s, %d call%s' % (
        len(rep), '' if len(rep) == 1 else 's', calls,
        '' if calls == 1 else 's'), file=out)
    for op, c in rep:
        print('  %-36s %d' % (op, c), file=out)
    rej = rejected_inputs()
    if rej:
        n = sum(c for _, c in rej)
        print('rejected inputs (left to the CPU kernel, which refused them; '
              'not fallbacks): %d call%s' % (n, '' if n == 1 else 's'),
              file=out)
        for op, c in rej:
            print('  %-36s %d' % (op, c), file=out)


def reset_fallback_report():
    _C.fallback_reset()


def set_fallback_policy(policy):
    """'allow', 'warn' (once per op, on stderr) or 'error' (the op raises)."""
    _C.set_fallback_policy(policy)


def fallback_policy():
    return _C.fallback_policy()


if os.environ.get('VNPU_FALLBACK_REPORT', '') not in ('', '0'):
    atexit.register(print_fallback_report, sys.stderr)
