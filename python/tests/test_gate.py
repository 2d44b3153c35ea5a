"""CTest python.gate (label cpu): the Python bench's timing gate module (BUILD/python/bench/_amax_gate)
exports PyInit__amax_gate alone (python/CMakeLists.txt seals it: its static copy of the core must bind only
to itself beside libamax_tune and torch), and its Gate raises a clear Python error for bad arguments and,
without a GPU, for the missing device.

usage: python3 test_gate.py BUILD
"""
import os
import subprocess
import sys
import unittest

GATE_DIR = os.path.join(os.path.abspath(sys.argv.pop(1)), "python", "bench")
sys.path.insert(0, GATE_DIR)
import _amax_gate  # noqa: E402


def has_gpu():
    try:
        _amax_gate.Gate(0, 1000.0)
        return True
    except RuntimeError as e:
        if "no GPU at ordinal 0" not in str(e):
            raise
        return False


class Gate(unittest.TestCase):
    def test_exports_only_its_init(self):
        nm = subprocess.run(["nm", "-D", "--defined-only", _amax_gate.__file__], stdout=subprocess.PIPE, text=True,
                            check=True).stdout
        self.assertEqual([line.split()[-1] for line in nm.splitlines()], ["PyInit__amax_gate"])

    def test_bad_timeout_is_named(self):
        with self.assertRaisesRegex(ValueError, r"^timeout_ms must be > 0, got -1\.0+$"):
            _amax_gate.Gate(0, -1.0)

    @unittest.skipIf(has_gpu(), "a GPU is present")
    def test_without_a_gpu(self):
        for device in (0, 3):
            with self.assertRaisesRegex(RuntimeError, r"^no GPU at ordinal %d for the timing gate$" % device):
                _amax_gate.Gate(device, 1000.0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
