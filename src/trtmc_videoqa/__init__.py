"""trtmc-videoqa: which TRTMC checkpoints answer a temporal question about a short clip, and how fast.

Importing the package loads no Dagger code; the Dagger main object lives in ``dagger_module``. Nor does it read the
package metadata: ``__version__`` is read on first use (PEP 562), so a helper process started from the package (the
child-group watcher) starts quickly.
"""

__version__: str  # read by __getattr__ below on first use


def __getattr__(name: str) -> str:
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("trtmc-videoqa")
    except PackageNotFoundError:  # a source tree that was never installed
        found = "0.0.0+unknown"
    globals()["__version__"] = found
    return found
