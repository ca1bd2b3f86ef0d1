# SPDX-License-Identifier: MIT
"""How the CPU fares on the tests that fail on npu: for each failure of a
saved run (run_suite.py --save), the same test instantiated for the CPU
(TestFooCPU::test_bar_cpu_float32) is run with pytest, and its outcome
printed: passed, failed, xfailed (PyTorch marks it an expected failure on
the CPU), skipped, or missing. A failure the CPU shares is PyTorch's own
(the CPU kernel the fallback runs, or the test's environment), not the
device's: a fact to classify the expectation file by.

  cpu_counterparts.py --tests DIR SAVED.json [--out FILE]
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')


def counterpart(test_id):
    """file::TestFooPRIVATEUSE1::test_x_npu_dt -> file::TestFooCPU::test_x_cpu_dt"""
    f, cls, name = test_id.split('::')
    cls = cls[:-len('PRIVATEUSE1')] + 'CPU'
    head, sep, tail = name.rpartition('_npu')
    return '%s::%s::%s' % (f, cls, head + '_cpu' + tail) if sep else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--tests', required=True)
    ap.add_argument('saved')
    ap.add_argument('--out', help='JSON {npu test id: CPU outcome}')
    args = ap.parse_args()
    with open(args.saved) as f:
        results = json.load(f)['results']
    failed = sorted(t for t, (o, _) in results.items()
                    if o == 'failed' and t.count('::') == 2)
    pairs = {t: counterpart(t) for t in failed}
    outcome = {t: 'missing' for t in failed}
    by_file = collections.defaultdict(list)
    for t, c in pairs.items():
        if c:
            by_file[c.split('::')[0]].append(c)
    back = {c: t for t, c in pairs.items() if c}
    env = dict(os.environ, PYTORCH_TESTING_DEVICE_ONLY_FOR='cpu',
               PYTHONDONTWRITEBYTECODE='1',
               PYTHONPATH=os.pathsep.join(
                   [os.path.join(ROOT, 'tests', 'torch', 'shim')] +
                   [p for p in os.environ.get('PYTHONPATH', '').split(
                       os.pathsep) if p]))
    env.pop('TORCH_TEST_DEVICES', None)
    for test_file, ids in sorted(by_file.items()):
        with tempfile.NamedTemporaryFile('r', suffix='.xml') as junit:
            subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p',
                            'no:cacheprovider', '--tb=no', '-rN',
                            '--junitxml', junit.name] + ids,
                           cwd=args.tests, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            import xml.etree.ElementTree as ET
            try:
                cases = list(ET.parse(junit.name).iter('testcase'))
            except ET.ParseError:
                cases = []
        for case in cases:
            cls = case.get('classname', '').split('.')[-1]
            cid = '%s::%s::%s' % (test_file, cls, case.get('name'))
            kinds = {c.tag: c for c in case}
            if 'skipped' in kinds:
                msg = kinds['skipped'].get('message', '') or ''
                o = 'xfailed' if 'xfail' in kinds['skipped'].get(
                    'type', '') or 'expected failure' in msg.lower() \
                    else 'skipped'
            elif kinds.keys() & {'failure', 'error'}:
                o = 'failed'
            else:
                o = 'passed'
            if cid in back:
                outcome[back[cid]] = o
    counts = collections.Counter(outcome.values())
    for t in failed:
        print('%-8s %s' % (outcome[t], t))
    print('cpu counterparts of %d npu failures: %s' % (
        len(failed), ', '.join('%d %s' % (n, o) for o, n in counts.items())))
    if args.out:
        with open(args.out, 'w') as f:
            json.dump(outcome, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
