# SPDX-License-Identifier: MIT
"""A class with each outcome run_suite.py must report (its own tests):
instantiated by hand as common_device_type would name it."""
import os
import time
import unittest


class TestSelftestPRIVATEUSE1(unittest.TestCase):
    def test_a_passes(self):
        pass

    def test_b_fails(self):
        self.assertEqual(1, 2)

    def test_c_listed_fails(self):
        self.assertEqual(1, 2)

    def test_d_skips(self):
        raise unittest.SkipTest('no')

    def test_e_crashes(self):
        if os.environ.get('SELFTEST_CRASH'):
            os.abort()

    def test_f_hangs(self):
        if os.environ.get('SELFTEST_HANG'):
            time.sleep(60)

    def test_g_after_the_crash(self):
        pass
