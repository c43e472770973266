"""Put the test doubles on a PATH: executables named trtmc, trtmc-server, trtmc_benchmark_worker and nvidia-smi in
a temporary bin."""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOUBLES = {
    "trtmc": "trtmc_build_double.py",
    "trtmc-server": "trtmc_server_double.py",
    "nvidia-smi": "nvidia_smi_double.py",
    "trtmc_benchmark_worker": "benchmark_worker_double.py",
}


def install_doubles(bin_dir: Path) -> dict[str, str]:
    """Write the wrappers (run by this interpreter) and return an environment with them first on PATH."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, module in DOUBLES.items():
        wrapper = bin_dir / name
        wrapper.write_text(
            f"#!{sys.executable}\n# TEST DOUBLE for {name}\n"
            f"import runpy, sys\nsys.argv[0] = {name!r}\n"
            f"runpy.run_path({str(HERE / module)!r}, run_name='__main__')\n"
        )
        wrapper.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env
