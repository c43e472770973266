"""TEST DOUBLE for `nvidia-smi`: says there is a GPU, and that it is a test double."""

import sys

if "-L" in sys.argv:
    print("GPU 0: TEST DOUBLE, not a GPU (UUID: GPU-test-double)")
else:
    print("TEST DOUBLE (not a GPU), 0.0, 0 MiB")
