# SPDX-License-Identifier: MIT
"""PyTorch's device-generic test classes on npu (torch_vnpu, PyTorch 2).

Runs each class of CLASSES from PyTorch's own test files with pytest, one
process per class, on the device type of npu_device_type.py. A test
that kills its process (a signal, an abort) or runs past the time limit
is reported as a crash or a hang and the rest of its class goes on in a
new process; crashes and hangs always fail the run.

Every test that fails must be listed in the expectation file with its
class of failure and a reason; the run fails on a failure not listed and
on a listed test that now passes, so the list only shrinks. Prints one
line per class and `torch-suite: N passed, N failed, N skipped`.

  run_suite.py --tests DIR [--classes A,B] [--sample K] [--save FILE]
               [--expectations FILE | --no-expectations]
               [--write-expectations FILE] [--results FILE]

DIR is the test/ directory of PyTorch's source. VNPU_FALLBACK is passed
through: the expectations are those of VNPU_FALLBACK=allow.
"""
import argparse
import collections
import fnmatch
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')

# (file, generic class) in the order they run
CLASSES = [
    ('test_view_ops.py', 'TestViewOps'),
    ('test_shape_ops.py', 'TestShapeOps'),
    ('test_indexing.py', 'TestIndexing'),
    ('test_type_promotion.py', 'TestTypePromotion'),
    ('test_torch.py', 'TestTorchDeviceType'),
    ('test_reductions.py', 'TestReductions'),
    ('test_unary_ufuncs.py', 'TestUnaryUfuncs'),
    ('test_binary_ufuncs.py', 'TestBinaryUfuncs'),
    ('test_nn.py', 'TestNNDeviceType'),
    ('test_ops.py', 'TestCommon'),
]
# parametrized over op_db: only the OpInfos of the ops we register
OPINFO_CLASSES = ['TestCommon']

CATEGORIES = {
    'wrong-result': 'the NPU or its fallback computes another value, '
                    'dtype, stride or error than PyTorch',
    'cpu-kernel': 'the fallback runs PyTorch\'s CPU kernel, which the test '
                  'or its OpInfo excuses or skips on the CPU (a known bug '
                  'of that kernel)',
    'not-supported': 'a feature docs/torch.md lists as not supported '
                     '(sparse, quantized, nested tensors, lazy clones)',
    'fallback-refused': 'the CPU fallback refuses the call',
    'privateuse1-limit': 'a limitation of PyTorch\'s PrivateUse1 '
                         'integration itself',
    'test-assumes-device': 'the test assumes a property of CUDA or of '
                           'the CPU that no out-of-tree device has',
    # the one category whose tests may also pass: which other tests ran
    # before in the process decides (a warn-once of a CPU kernel the
    # fallback shares), so a sample of the suite may see them pass
    'order-dependent': 'fails or passes depending on the tests run '
                       'before it in its process',
    'test-environment': 'the test needs a package PyTorch\'s CI has and '
                        'fails without it instead of skipping',
}
MAX_RESTARTS = 200


def instantiated(cls):
    # PyTorch names a class after its base's device type, privateuse1; the
    # tests in it are named after the backend, _npu
    return cls + 'PRIVATEUSE1'


class Expectations:
    """The expectation file: blocks headed `[category] reason`, then one
    test id (or fnmatch pattern) per line; # starts a comment."""

    def __init__(self, path):
        self.entries = []          # (pattern, category, reason, line)
        category = reason = None
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.split('#', 1)[0].strip() if \
                    line.lstrip().startswith('#') else line.strip()
                if not line:
                    continue
                if line.startswith('['):
                    category, _, reason = line[1:].partition(']')
                    reason = reason.strip()
                    if category not in CATEGORIES or not reason:
                        sys.exit('%s:%d: want "[category] reason" with a '
                                 'category of %s' %
                                 (path, n, ', '.join(CATEGORIES)))
                    continue
                if category is None:
                    sys.exit('%s:%d: a test id before any [category] line'
                             % (path, n))
                self.entries.append((line, category, reason, n))

    def match(self, test_id):
        for e in self.entries:
            if e[0] == test_id or fnmatch.fnmatchcase(test_id, e[0]):
                return e
        return None


def run_class(args, test_file, cls, opinfos_path, log):
    """{test id: (outcome, message)}: outcome passed, failed, skipped,
    crash or hang."""
    results = {}
    done_path = tempfile.mktemp(prefix='torch-suite-done-')
    progress_path = tempfile.mktemp(prefix='torch-suite-progress-')
    env = dict(os.environ)
    env.update({
        'TORCH_TEST_DEVICES': os.path.join(HERE, 'npu_device_type.py'),
        'PYTORCH_TESTING_DEVICE_ONLY_FOR': 'npu',
        'PYTHONPATH': os.pathsep.join(
            [HERE, os.path.join(ROOT, 'tests', 'torch', 'shim')] +
            [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p]),
        'PYTHONDONTWRITEBYTECODE': '1',
        'VNPU_SUITE_PROGRESS': progress_path,
        'VNPU_SUITE_DESELECT': done_path,
        'VNPU_SUITE_SAMPLE': str(args.sample),
        'VNPU_SUITE_TEST_TIMEOUT': str(args.test_timeout),
        'VNPU_SUITE_OPINFO_CLASSES': ' '.join(OPINFO_CLASSES),
        'VNPU_SUITE_OPINFOS': opinfos_path,
    })
    # no -W: PyTorch's tests count the warnings they expect
    cmd = [sys.executable, '-m', 'pytest', '-p', 'suite_plugin',
           '-p', 'no:cacheprovider', '-q', '-rN', '--tb=no',
           '%s::%s' % (test_file, instantiated(cls))]
    try:
        for _ in range(MAX_RESTARTS):
            with open(done_path, 'w') as f:
                f.writelines(t + '\n' for t in results)
            open(progress_path, 'w').close()
            p = subprocess.run(cmd, cwd=args.tests, env=env,
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               errors='replace')
            log.write(p.stdout)
            started, finished, hang = None, False, False
            with open(progress_path, errors='replace') as f:
                for line in f:
                    word, _, rest = line.rstrip('\n').partition(' ')
                    if line.startswith('Timeout ('):
                        hang = True
                    elif word == 'start':
                        started = rest
                    elif word == 'finished':
                        finished = True
                    elif word in ('passed', 'failed', 'skipped'):
                        tid, _, msg = rest.partition('\t')
                        results.setdefault(tid, (word, msg))
            if finished and p.returncode in (0, 1, 5):
                break
            if started is None or started in results:
                # died outside a test: collection or start-up
                tail = p.stdout.strip().splitlines()[-5:]
                results['%s::%s (collection)' % (test_file, instantiated(cls))] = \
                    ('crash', 'pytest exited %d outside any test: %s' %
                     (p.returncode, ' | '.join(tail)))
                break
            results[started] = (
                'hang' if hang else 'crash',
                'no result after %d s' % args.test_timeout if hang else
                'the process died (exit status %d)' % p.returncode)
            print('torch-suite: %s in %s; the class goes on' %
                  (results[started][0], started), flush=True)
    finally:
        for path in (done_path, progress_path):
            if os.path.exists(path):
                os.unlink(path)
    return results


def write_opinfos(path):
    sys.path[:0] = [os.path.join(ROOT, 'tests', 'opinfo'),
                    os.path.join(ROOT, 'tests', 'torch', 'shim')]
    from yaml_opinfos import selected_opinfos
    with open(path, 'w') as f:
        f.writelines(o.formatted_name + '\n' for o in selected_opinfos())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--tests', required=True,
                    help="the test/ directory of PyTorch's source")
    ap.add_argument('--classes', default='',
                    help='comma-separated generic class names')
    ap.add_argument('--class-of-file', action='append', default=[],
                    metavar='FILE:CLASS',
                    help='run this class instead (the runner\'s own tests)')
    ap.add_argument('--sample', type=int, default=1,
                    help='run one test in K (by a hash of its id)')
    ap.add_argument('--test-timeout', type=int, default=300)
    ap.add_argument('--expectations',
                    default=os.path.join(HERE, 'expected-failures.txt'))
    ap.add_argument('--no-expectations', action='store_true',
                    help='report only; crashes still fail')
    ap.add_argument('--write-expectations', metavar='FILE',
                    help='write the failures found as an expectation '
                         'file to review')
    ap.add_argument('--save', metavar='FILE', help='every result as JSON')
    ap.add_argument('--log', metavar='FILE', help="pytest's output")
    ap.add_argument('--results', metavar='FILE',
                    help='one JSON line per class ({"name", "result"}, as '
                         "meson's testlog.json): FAIL for a class with a "
                         'crash, a hang or a verdict against the '
                         'expectation file')
    args = ap.parse_args()

    chosen = [c for c in CLASSES if not args.classes or
              c[1] in args.classes.split(',')]
    if args.class_of_file:
        chosen = [tuple(c.split(':', 1)) for c in args.class_of_file]
    unknown = set(filter(None, args.classes.split(','))) - \
        {c[1] for c in CLASSES}
    if unknown:
        sys.exit('run_suite: unknown classes: %s' % ', '.join(sorted(unknown)))
    for test_file, _ in chosen:
        if not os.path.isfile(os.path.join(args.tests, test_file)):
            sys.exit('run_suite: %s not in %s' % (test_file, args.tests))
    expectations = None
    if not args.no_expectations:
        expectations = Expectations(args.expectations)

    fallback = os.environ.get('VNPU_FALLBACK', 'allow')
    print('torch-suite: PyTorch %s test classes on npu, '
          'VNPU_FALLBACK=%s%s' % (
              __import__('torch').__version__, fallback,
              ', one test in %d' % args.sample if args.sample > 1 else ''),
          flush=True)
    log = open(args.log, 'w') if args.log else open(os.devnull, 'w')
    fd, opinfos_path = tempfile.mkstemp(prefix='torch-suite-opinfos-')
    os.close(fd)
    write_opinfos(opinfos_path)
    results = {}
    per_class = []
    try:
        for test_file, cls in chosen:
            t0 = time.monotonic()
            r = run_class(args, test_file, cls, opinfos_path, log)
            results.update(r)
            c = collections.Counter(o for o, _ in r.values())
            ran = c['passed'] + c['failed'] + c['crash'] + c['hang']
            per_class.append((cls, c, time.monotonic() - t0))
            print('  %-22s %5d passed %5d failed %5d skipped %s%s  %5.1f %%'
                  '  (%.0f s)' % (
                      cls, c['passed'], c['failed'], c['skipped'],
                      '%d crashed ' % c['crash'] if c['crash'] else '',
                      '%d hung ' % c['hang'] if c['hang'] else '',
                      100.0 * c['passed'] / ran if ran else 100.0,
                      time.monotonic() - t0), flush=True)
    finally:
        os.unlink(opinfos_path)
        log.close()

    total = collections.Counter(o for o, _ in results.values())
    bad = total['failed'] + total['crash'] + total['hang']
    ran = total['passed'] + bad
    print('torch-suite: %d passed, %d failed, %d skipped (%.1f %% of the '
          'tests run passed; %d crashed, %d hung)' % (
              total['passed'], bad, total['skipped'],
              100.0 * total['passed'] / ran if ran else 100.0,
              total['crash'], total['hang']))

    if args.save:
        with open(args.save, 'w') as f:
            json.dump({'fallback': fallback, 'sample': args.sample,
                       'classes': {cls: dict(c) for cls, c, _ in per_class},
                       'results': results}, f, indent=1, sort_keys=True)
    if args.write_expectations:
        with open(args.write_expectations, 'w') as f:
            for tid, (o, msg) in sorted(results.items()):
                if o == 'failed':
                    f.write('%s  # %s\n' % (tid, msg[:200]))

    def class_of(test_id):
        part = test_id.split('::')[1] if '::' in test_id else ''
        return part.split(' ')[0][:-len(instantiated(''))]

    bad_classes = set()
    for tid, (o, msg) in sorted(results.items()):
        if o in ('crash', 'hang'):
            print('torch-suite: %s: %s (%s): never acceptable' % (tid, o, msg))
            bad_classes.add(class_of(tid))
    if expectations is not None:
        listed = collections.defaultdict(list)
        for tid, (o, msg) in sorted(results.items()):
            e = expectations.match(tid)
            if e is not None:
                listed[e[3]].append(o)
            if o == 'failed' and e is None:
                print('torch-suite: UNEXPECTED failure %s: %s' % (tid, msg))
                bad_classes.add(class_of(tid))
        full = args.sample == 1 and not args.classes
        for pattern, category, reason, n in expectations.entries:
            outcomes = listed.get(n, [])
            if outcomes and 'failed' not in outcomes and \
                    set(outcomes) != {'skipped'} and \
                    category != 'order-dependent':
                print('torch-suite: %s now passes: remove it from the '
                      'expectation file (line %d)' % (pattern, n))
                bad_classes.add(class_of(pattern))
            elif not outcomes and full:
                print('torch-suite: %s (expectation file line %d) matches '
                      'no test' % (pattern, n))
                bad_classes.add(class_of(pattern))
        n_listed = sum(1 for tid, (o, _) in results.items()
                       if o == 'failed' and expectations.match(tid))
        print('torch-suite: %d failures listed in %s' % (
            n_listed, os.path.basename(args.expectations)))
    ok = not bad_classes
    if args.results:
        with open(args.results, 'w') as f:
            for _, cls in chosen:
                f.write(json.dumps({
                    'name': 'torch-suite/' + cls,
                    'result': 'FAIL' if cls in bad_classes else 'OK'}) + '\n')
            for cls in sorted(bad_classes - {c for _, c in chosen}):
                f.write(json.dumps({'name': 'torch-suite/' + (cls or '?'),
                                    'result': 'FAIL'}) + '\n')
    print('torch-suite: %s' % ('PASS' if ok else 'FAIL'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
