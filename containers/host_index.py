"""The package index a container build should use: what this machine's pip uses, less what cannot apply inside it.

    python3 host_index.py [--python PY] [--cert-to DIR]

Reads pip's effective settings (`PY -m pip config list`: PIP_* environment variables over the `install` section
over the `global` section of every config file pip reads; without a runnable pip, the environment and the config
files directly) and prints the build arguments, one `NAME=value` a line:

    PIP_INDEX_URL=...           the index (https://pypi.org/simple when none is set)
    PIP_EXTRA_INDEX_URL=...     the extra http(s) indexes, only when there are any

`--cert-to DIR` copies the CA bundle pip is told to use (`cert`) into DIR as host-pip-cert.pem, for the recipe's
containers/certs/. Left out, with a notice on stderr: local `file://` indexes, find-links and constraint files (they
do not exist inside the image) and a client certificate. An index address that carries a user name or password is
refused (exit 2): a build argument shows in the image history, so no credential may go into one.
Standard library only.
"""

from __future__ import annotations

import ast
import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

DEFAULT_INDEX = "https://pypi.org/simple"
CERT_NAME = "host-pip-cert.pem"
LOCAL_ONLY = ("find-links", "constraint", "requirement", "client-cert")  # never meaningful inside the image


class Refused(Exception):
    """A setting that must not reach the build (exit 2)."""


def pip_config(python: str) -> dict[str, str] | None:
    """`pip config list` as {'global.index-url': value, ':env:.cert': value, ...}; None when pip cannot run."""
    try:
        done = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    found = {}
    for line in done.stdout.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        try:
            found[key.strip()] = str(ast.literal_eval(value.strip()))
        except (ValueError, SyntaxError):
            found[key.strip()] = value.strip()
    return found


def read_config_files(environ: dict[str, str]) -> dict[str, str]:
    """The same keys from the environment and the files pip reads, in pip's order (later files win)."""
    home = Path(environ.get("HOME", "~")).expanduser()
    files = [Path(d) / "pip" / "pip.conf" for d in reversed(environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":")) if d]
    files += [
        Path("/etc/pip.conf"),
        home / ".pip" / "pip.conf",
        Path(environ.get("XDG_CONFIG_HOME", home / ".config")) / "pip" / "pip.conf",
    ]
    if environ.get("VIRTUAL_ENV"):
        files.append(Path(environ["VIRTUAL_ENV"]) / "pip.conf")
    if environ.get("PIP_CONFIG_FILE"):  # pip reads it last of all the files: it wins
        files.append(Path(environ["PIP_CONFIG_FILE"]))
    found: dict[str, str] = {}
    for path in files:
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error):
            continue
        for section in parser.sections():
            for key, value in parser.items(section):
                found[f"{section}.{key.replace('_', '-')}"] = value
    for name, value in environ.items():
        if name.startswith("PIP_") and name != "PIP_CONFIG_FILE":
            found[f":env:.{name[4:].lower().replace('_', '-')}"] = value
    return found


def effective(config: dict[str, str], option: str) -> str | None:
    """pip's precedence: the environment, then the install command's section, then global."""
    for scope in (":env:", "install", "global"):
        if f"{scope}.{option}" in config:
            return config[f"{scope}.{option}"]
    return None


def _shown(value: str) -> str:
    """A setting as it may be printed: every URL in it without its user name or password."""
    shown = []
    for word in value.split():
        parts = urlsplit(word)
        if parts.username or parts.password:
            word = parts._replace(netloc="***@" + (parts.hostname or "") + (f":{parts.port}" if parts.port else ""))
            word = word.geturl()
        shown.append(word)
    return " ".join(shown)


def _checked(url: str, setting: str) -> str:
    parts = urlsplit(url)
    if parts.username or parts.password:
        raise Refused(
            f"{setting} carries credentials ({_shown(url)}); a build argument shows in the image "
            "history, so it is not passed. Use an index that needs none inside the build."
        )
    return url


def build_settings(config: dict[str, str], notices: list[str]) -> tuple[dict[str, str], str | None]:
    """(build arguments, CA bundle path or None) for the settings in `config`."""
    if (effective(config, "no-index") or "").lower() in ("1", "true", "yes", "on"):
        raise Refused("pip is set to no-index here (local files only); the build needs a package index")
    index = effective(config, "index-url") or DEFAULT_INDEX
    if not index.startswith(("http://", "https://")):
        raise Refused(f"the index {index} is local to this machine; it does not exist inside the build")
    arguments = {"PIP_INDEX_URL": _checked(index, "index-url")}
    extras = []
    for url in (effective(config, "extra-index-url") or "").split():
        if url.startswith(("http://", "https://")):
            extras.append(_checked(url, "extra-index-url"))
        else:
            notices.append(f"left out: extra index {_shown(url)} (local to this machine)")
    if extras:
        arguments["PIP_EXTRA_INDEX_URL"] = " ".join(extras)
    for option in LOCAL_ONLY:
        if effective(config, option):
            notices.append(f"left out: {option} {_shown(effective(config, option))} (local to this machine)")
    cert = effective(config, "cert")
    if cert and not Path(cert).is_file():
        notices.append(f"left out: cert {cert} (no such file)")
        cert = None
    return arguments, cert


def main(argv: list[str]) -> int:
    python, cert_to = sys.executable, None
    args = list(argv)
    while args:
        flag = args.pop(0)
        if flag in ("--python", "--cert-to") and args:
            value = args.pop(0)
            if flag == "--python":
                python = value
            else:
                cert_to = Path(value)
        else:
            print(__doc__, file=sys.stderr)
            return 2
    config = pip_config(python)
    if config is None:
        config = read_config_files(dict(os.environ))
    notices: list[str] = []
    try:
        arguments, cert = build_settings(config, notices)
    except Refused as refused:
        print(f"host_index: {refused}", file=sys.stderr)
        return 2
    if cert and cert_to is not None:
        shutil.copyfile(cert, cert_to / CERT_NAME)
        notices.append(f"CA bundle {cert} copied to {cert_to / CERT_NAME} (a public certificate, no secret)")
    elif cert:
        notices.append(f"pip's CA bundle here is {cert}; --cert-to DIR copies it for the build")
    for notice in notices:
        print(f"host_index: {notice}", file=sys.stderr)
    for name, value in arguments.items():
        print(f"{name}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
