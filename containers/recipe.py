"""What the shell recipes read, with the standard library only (it runs on a bare base image's python3).

python3 recipe.py pin PINS KEY                  a value of the pin file, e.g. trtmc.commit, images.cpu.python;
                                                aiperf.requirement is package==version
python3 recipe.py requirements PYPROJECT        this package's dependencies, one a line, without aiperf (it
                                                gets an environment of its own) and dagger-io (only the Dagger
                                                module imports it, inside the engine), plus what the package
                                                imports that only aiperf brought (tokenizers)
python3 recipe.py build-requirements PYPROJECT  the build backend's requirements ([build-system] requires),
                                                one a line: installed with the dependencies, so the package
                                                itself installs with no build isolation and no download
python3 recipe.py extra PYPROJECT NAME           the requirements of one optional extra, one a line (the
                                                comparison image installs `real-server`)
python3 recipe.py profiles MATRIX.json          the profiles of a `trtmc-videoqa matrix` list, one a line
"""

from __future__ import annotations

import json
import re
import sys
import tomllib

OWN_ENVIRONMENT = {"aiperf", "dagger-io"}  # never installed beside the package
ALSO_IMPORTED = ["tokenizers"]  # the package imports it; aiperf's dependencies brought it before
PROFILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def pin(path: str, key: str) -> str:
    with open(path, "rb") as handle:
        value: object = tomllib.load(handle)
    parts = key.split(".")
    if parts == ["aiperf", "requirement"]:
        return f"{pin(path, 'aiperf.package')}=={pin(path, 'aiperf.version')}"
    for part in parts:
        if not isinstance(value, dict) or part not in value:
            raise SystemExit(f"{path} has no {key}")
        value = value[part]
    if not isinstance(value, str):
        raise SystemExit(f"{path}: {key} is a table, not a value")
    return value


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~\[;(]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def requirements(pyproject: str) -> list[str]:
    with open(pyproject, "rb") as handle:
        dependencies = tomllib.load(handle)["project"]["dependencies"]
    kept = [d for d in dependencies if _name(d) not in OWN_ENVIRONMENT]
    named = {_name(d) for d in kept}
    return kept + [extra for extra in ALSO_IMPORTED if extra not in named]


def build_requirements(pyproject: str) -> list[str]:
    with open(pyproject, "rb") as handle:
        return list(tomllib.load(handle).get("build-system", {}).get("requires", []))


def extra(pyproject: str, name: str) -> list[str]:
    with open(pyproject, "rb") as handle:
        extras = tomllib.load(handle)["project"].get("optional-dependencies", {})
    if name not in extras:
        raise SystemExit(f"{pyproject} has no optional extra {name!r}")
    return list(extras[name])


def profiles(matrix: str) -> list[str]:
    try:
        with open(matrix, encoding="utf-8") as handle:
            listed = json.load(handle)
    except (OSError, ValueError) as error:
        raise SystemExit(f"{matrix} is not a JSON list of profile names ({error})") from None
    if not isinstance(listed, list) or not all(isinstance(p, str) and PROFILE.fullmatch(p) for p in listed):
        raise SystemExit(f"{matrix} is not a JSON list of profile names")
    return listed


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "pin":
        print(pin(argv[1], argv[2]))
    elif len(argv) == 2 and argv[0] == "requirements":
        print("\n".join(requirements(argv[1])))
    elif len(argv) == 2 and argv[0] == "build-requirements":
        print("\n".join(build_requirements(argv[1])))
    elif len(argv) == 3 and argv[0] == "extra":
        print("\n".join(extra(argv[1], argv[2])))
    elif len(argv) == 2 and argv[0] == "profiles":
        for profile in profiles(argv[1]):
            print(profile)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
