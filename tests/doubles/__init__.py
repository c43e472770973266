"""TEST DOUBLES standing in for the GPU toolchain in tests: `trtmc build`, `trtmc-server`,
`trtmc_benchmark_worker` and `nvidia-smi` (perf_serving's double lives in the fixture checkout,
tests/fixtures/trtmc_families/apps/perf_serving).

They exist only under tests/. Nothing they produce is a TRTMC result: the bundle says `test_double`, the server is
the reference endpoint (itself a labelled test double), and the "GPU" is named TEST DOUBLE.
"""
