"""TEST DOUBLE for `trtmc_benchmark_worker`, perf_serving's persistent worker: it only has to exist (perf_serving's
--worker must name a file); the perf_serving test double never runs it, and it does nothing when run."""

import sys

if __name__ == "__main__":
    sys.exit(0)
