"""TEST DOUBLES standing in for the GPU toolchain in tests: `trtmc build`, `trtmc-server` and `nvidia-smi`.

They exist only under tests/. Nothing they produce is a TRTMC result: the bundle says `test_double`, the server is
the reference endpoint (itself a labelled test double), and the "GPU" is named TEST DOUBLE.
"""
