# SPDX-License-Identifier: MIT
"""The part of expecttest that PyTorch 1.13's test helpers import
(torch.testing._internal.common_utils). Debian does not package
expecttest; the tests here never accept expected output."""
import unittest

ACCEPT = False


class TestCase(unittest.TestCase):
    def assertExpectedInline(self, actual, expect, skip=0):
        self.assertEqual(actual, expect)
