"""The walk of one qualify request through the package's modules: a self-test run (`qualify --workload synthetic
--repeats 1 --warmup 1 --quiet`) in this process, traced with `sys.setprofile`.

A step is a move of control from one module of the run's spine to another: a call into it, or a return to it. The
spine is the rooms a request passes through to become rows and a report: cli/, runs/, ladders/, rows/ and the
stage protocol (`climb/protocol.py`, `stages/protocol.py` before it moved); calls into other rooms (the stages,
serving/, report/, publish/, common/ ...) are not steps, and the walk goes on where control comes back; plan/ and
`runs/requests.py` are the data the run carries, not steps; module bodies (imports) and comprehensions are not
steps. A climb back is a step into a module the walk already left before.

    python bench/request_walk.py OUT_DIR           # prints steps, climbs back and modules, writes OUT_DIR.walk.txt
"""

from __future__ import annotations

import json
import sys
from types import FrameType
from typing import Any

SPINE = {"cli", "runs", "ladders", "rows"}
PROTOCOL = {"trtmc_videoqa.climb.protocol", "trtmc_videoqa.stages.protocol"}
NOT_STEPS = {"<module>", "<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"}


def spine_module(name: str | None) -> str | None:
    if not name or not name.startswith("trtmc_videoqa.") or name == "trtmc_videoqa.runs.requests":
        return None
    return name if name.split(".")[1] in SPINE or name in PROTOCOL else None


def main(out: str) -> None:
    walk: list[str] = []
    importing = [0]

    def profile(frame: FrameType, event: str, _: Any) -> None:
        if frame.f_code.co_name == "<module>":
            importing[0] += {"call": 1, "return": -1}.get(event, 0)
            return
        back = frame.f_back
        if importing[0] or back is None or {frame.f_code.co_name, back.f_code.co_name} & NOT_STEPS:
            return
        if event not in ("call", "return"):
            return
        module = spine_module((frame if event == "call" else back).f_globals.get("__name__"))
        if module and (not walk or walk[-1] != module):
            walk.append(module)

    from trtmc_videoqa.cli.main import main as cli_main

    argv = ["qualify", "--out", out, "--workload", "synthetic", "--repeats", "1", "--warmup", "1", "--quiet"]
    sys.setprofile(profile)
    try:
        code = cli_main(argv)
    finally:
        sys.setprofile(None)
    seen: set[str] = set()
    climbs = 0
    for module in walk:
        climbs += module in seen
        seen.add(module)
    print(json.dumps({"exit": code, "steps": len(walk) - 1, "climbs_back": climbs, "modules": len(seen)}))
    with open(out + ".walk.txt", "w") as file:
        file.write("\n".join(walk) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
