# SPDX-License-Identifier: MIT
"""run_suite.py's verdicts on a class with every outcome: a failure not
listed, a listed test that passes, a crash and a hang each fail the run,
and the tests after a crash still run."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SELF = os.path.join(HERE, 'selftest')


def run(tmp, expectations, **env):
    save = os.path.join(tmp, 'r.json')
    p = subprocess.run(
        [sys.executable, os.path.join(HERE, 'run_suite.py'), '--tests', SELF,
         '--class-of-file', 'test_selftest.py:TestSelftest',
         '--expectations', expectations, '--test-timeout', '5',
         '--save', save],
        env=dict(os.environ, **env), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    with open(save) as f:
        results = {k.split('::')[-1]: v[0]
                   for k, v in json.load(f)['results'].items()}
    return p.returncode, p.stdout, results


def expectation_file(tmp, lines):
    path = os.path.join(tmp, 'e.txt')
    with open(path, 'w') as f:
        f.write('[wrong-result] on purpose\n' + ''.join(
            'test_selftest.py::TestSelftestPRIVATEUSE1::%s\n' % t
            for t in lines))
    return path


def test_verdicts():
    with tempfile.TemporaryDirectory() as tmp:
        both = expectation_file(tmp, ['test_b_fails', 'test_c_listed_fails'])
        rc, out, r = run(tmp, both)
        assert rc == 0, out
        assert r == {'test_a_passes': 'passed', 'test_b_fails': 'failed',
                     'test_c_listed_fails': 'failed',
                     'test_d_skips': 'skipped', 'test_e_crashes': 'passed',
                     'test_f_hangs': 'passed',
                     'test_g_after_the_crash': 'passed'}
        assert 'torch-suite: 4 passed, 2 failed, 1 skipped' in out

        # a failure not listed
        rc, out, _ = run(tmp, os.path.join(SELF, 'expected.txt'))
        assert rc == 1 and 'UNEXPECTED failure' in out and 'test_b_fails' in out

        # a listed test that passes: the list must shrink
        rc, out, _ = run(tmp, expectation_file(
            tmp, ['test_a_passes', 'test_b_fails', 'test_c_listed_fails']))
        assert rc == 1 and 'test_a_passes now passes' in out

        # a crash and a hang fail the run even when listed, and the
        # class goes on after them
        listed = expectation_file(tmp, ['test_b_fails', 'test_c_listed_fails',
                                        'test_e_crashes', 'test_f_hangs'])
        rc, out, r = run(tmp, listed, SELFTEST_CRASH='1', SELFTEST_HANG='1')
        assert rc == 1, out
        assert r['test_e_crashes'] == 'crash' and r['test_f_hangs'] == 'hang'
        assert r['test_g_after_the_crash'] == 'passed'
        assert 'never acceptable' in out
