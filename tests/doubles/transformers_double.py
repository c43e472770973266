"""TEST DOUBLE for Hugging Face's `transformers` script, as `trtmc-videoqa compare` runs it: `transformers version`
prints a version, and `transformers serve ...` never gets ready: it writes a log as the real server does when it
cannot load its model, then exits 1.

Knobs, from the environment: TRANSFORMERS_DOUBLE_FAILURE picks the log: `no-driver` (torch's words on a machine
without an NVIDIA driver, asked for --device cuda), `no-hub` (transformers' words for a checkpoint that is not all
in the hub cache, with the hub out of reach), else `crash` (an exception naming a local path and the hub token, as
a loader's error may); TRANSFORMERS_DOUBLE_CALLS names a file each call appends its arguments to, so a
test sees whether the server was started at all. `install_transformers_double` writes the script.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

UPDATE_HINT = "Hint: A new version of transformers is available! To update, run: /opt/venv/bin/python3 -m pip install"
NO_DRIVER = (
    "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a "
    "driver from http://www.nvidia.com/Download/index.aspx"
)
NO_HUB = (
    "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in the "
    "cached files.\nCheck your internet connection or see how to run the library in offline mode at "
    "'https://huggingface.co/docs/transformers/installation#offline-mode'."
)


def crash_line() -> str:
    """The crash's last line: a local path and the hub token (when one is set) in it, as a loader's error may say."""
    token = os.environ.get("HF_TOKEN", "")
    return f"OSError: TEST DOUBLE cannot read {Path.home()}/weights/model.safetensors (token {token}): header too large"


def main() -> int:
    calls = os.environ.get("TRANSFORMERS_DOUBLE_CALLS")
    if calls:
        with open(calls, "a", encoding="utf-8") as log:
            log.write(json.dumps(sys.argv[1:]) + "\n")
    if sys.argv[1:2] == ["version"]:
        print("TEST DOUBLE for transformers\n5.24.0")
        return 0
    if sys.argv[1:2] != ["serve"]:
        print(f"TEST DOUBLE for transformers: no command {sys.argv[1:2]}", file=sys.stderr)
        return 2
    print("INFO: TEST DOUBLE for transformers serve: loading the model")
    print("Traceback (most recent call last):")
    print(f'  File "{Path(__file__).resolve()}", line 1, in <module>')
    failure = os.environ.get("TRANSFORMERS_DOUBLE_FAILURE")
    print(NO_DRIVER if failure == "no-driver" else NO_HUB if failure == "no-hub" else crash_line())
    print(UPDATE_HINT)  # the real script's last line may be its update notice, not the error
    sys.stdout.flush()
    return 1


def install_transformers_double(bin_dir: Path) -> Path:
    """The double as an executable `transformers` script (run by this interpreter) in `bin_dir`."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "transformers"
    script.write_text(
        f"#!{sys.executable}\n# TEST DOUBLE for transformers\nimport runpy\n"
        f"runpy.run_path({str(Path(__file__).resolve())!r}, run_name='__main__')\n"
    )
    script.chmod(0o755)
    return script


if __name__ == "__main__":
    sys.exit(main())
