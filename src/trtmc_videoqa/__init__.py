"""trtmc-videoqa: which TRTMC checkpoints answer a temporal question about a short clip, and how fast.

Importing the package loads no Dagger code; the Dagger main object lives in ``dagger_module``.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("trtmc-videoqa")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0.0.0+unknown"
