# SPDX-License-Identifier: MIT
"""The OpInfos of PyTorch's op_db that judge the ops of
dispatcher/ops/native_functions.yaml: shared by the OpInfo harness and by
PyTorch's own TestCommon on npu (scripts/torch-suite.sh)."""
import os
import re

from torch.testing._internal.common_methods_invocations import op_db

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')

# OpInfos that reach yaml ops other than by name: through decomposition
# (nll_loss -> nll_loss_forward, cross_entropy -> cross_entropy_loss,
# threshold -> threshold_backward, batch_norm -> native_batch_norm) or as
# a fill (fill -> fill_, new_full/full_like -> full)
REACHING = ['nn.functional.nll_loss', 'nn.functional.cross_entropy', 'fill',
            'new_full', 'full_like', 'nn.functional.threshold',
            'nn.functional.batch_norm']


def yaml_ops():
    ops = []
    with open(os.path.join(ROOT, 'dispatcher', 'ops',
                           'native_functions.yaml')) as f:
        for line in f:
            m = re.match(r'- func: ([\w:]+)(\.\w+)?\(', line)
            if m:
                name = m.group(1)
                ops.append((name if '::' in name else 'aten::' + name) +
                           (m.group(2) or ''))
    return ops


def selected_opinfos():
    bases = {re.sub(r'\..*', '', o.split('::')[1]) for o in yaml_ops()}
    chosen = []
    for o in op_db:
        if o.name.startswith('masked.') or o.name.startswith('_refs'):
            continue
        short = o.name.split('.')[-1]
        if {o.aten_name, short, o.name} & bases or o.name in REACHING:
            chosen.append(o)
    return chosen


