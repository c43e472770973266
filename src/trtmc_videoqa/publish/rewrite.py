"""The last step of every run: make the artifact tree public-safe and portable, then prove it.

Raw logs are written under `private/` folders from the start (`private_paths`). This pass then:

1. copies each workload the rows ran (its workload.json, clips and attribution files) to `workload/<name>/files/`,
   so a recorded AIPerf command finds its clips inside the artifacts;
2. rewrites the public text files the tool composes: this machine's absolute paths become artifact-relative paths
   or named placeholders (`$TRTMC_CHECKOUT`, `$BUNDLE_CACHE`, `$VENV`, `$HOME`, `$TMPDIR`, ...), the aiperf
   executable becomes plain `aiperf` (installed with `pip install aiperf==VERSION`), and the host of a server that
   is not loopback becomes `<endpoint-host>` where it stands in a URL; secrets are already replaced where they are
   written. command.txt is rewritten argument by argument and quoted again, so a placeholder for a path that held
   a space stays one the shell expands (`"$HF_HUB_CACHE"/...`). Measured evidence (request bodies, answers,
   workloads, execution.jsonl: publish/evidence.py) is never changed, except the clip references the tool wrote
   into its request plan (`video`, `clip_path`: where a clip was read, never sent), so every request_sha
   re-computes and the published workload qualifies again. A user or host name is never replaced as a word
   (issue 26): a question that ends "asked as root" keeps its word;
3. runs the public check (`public_check`) over the tree, which fails naming `file:line` for anything left and warns,
   naming file and line, where the user or host name is a word of workload or server text.

Paths are replaced longest first, so a path inside the output folder becomes relative, not `$TMPDIR/...`.
"""

from __future__ import annotations

import re
import shlex
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..common.atomic_write import check_inside, copy_file_atomic, write_bytes_atomic
from ..common.digests import file_sha256
from ..common.net import is_loopback_host
from ..common.safe_read import UnreadableInput, read_regular_file
from ..common.scrub import known_secrets
from ..common.shell_quoting import reproducible_command
from ..hub.cache import hub_cache_dir
from ..results.layout import (
    BUNDLES_DIR,
    COMMAND_FILE,
    OUTPUT_TOP_NAMES,
    WORKLOAD_DIR,
    WORKLOAD_FILES_DIR,
    workload_dir,
)
from ..workloads import artifacts
from ..workloads.artifacts import restamp_prepared
from .boundaries import PATH_AFTER, PATH_BEFORE, WORD_AFTER, led_by
from .check import (
    BINARY_SUFFIXES,
    SNIFF_BYTES,
    PublicSentinels,
    check_public,
    keep_path,
    path_forms,
    public_files,
    run_sentinels,
)
from .evidence import is_file_reference_file, is_measured, map_file_references
from .machine_names import run_dirs

if TYPE_CHECKING:
    from ..workloads import Workload


# The largest file the rewrite reads: the files the tool composes are kB to a few MB (a report with its strip);
# a larger one under the tool's names was not written by it as text.
REWRITE_CAP = 64 << 20

# What renders the reports once the files they are built from are public: given the rewrite of one value.
Render = Callable[[Callable[[str], str]], None]


@dataclass(frozen=True)
class PublicMap:
    """What each of this machine's paths and names becomes in a public file, as one pattern per kind."""

    paths: dict[str, str]  # absolute path (a trailing "/" marks the form that becomes a relative path) -> new
    words: dict[str, str]  # endpoint host name -> placeholder, replaced in a URL's authority only

    def _pattern(self) -> re.Pattern[str] | None:
        # The same boundaries as the public check: a path is replaced exactly where the check would find it, so
        # what the rewrite leaves, the check sees, and /tmp in /var/tmp or /tmpfoo is left alone. Longest first.
        alternatives = [
            led_by(PATH_BEFORE, path) + ("" if path.endswith("/") else PATH_AFTER)
            for path in sorted(self.paths, key=len, reverse=True)
        ]
        return re.compile(f"(?:{'|'.join(alternatives)})") if alternatives else None

    def rewrite_paths(self, text: str) -> str:
        pattern = self._pattern()
        return text if pattern is None else pattern.sub(lambda found: self.paths[found.group(0)], text)

    def rewrite(self, text: str) -> str:
        """Paths, and endpoint hosts where they stand in a URL (`http://HOST:8000`, `user@HOST`)."""
        text = self.rewrite_paths(text)
        for word, new in self.words.items():
            text = re.sub(f"(?<=//|.@){re.escape(word)}{WORD_AFTER}", new, text)
        return text

    def rewrite_file(self, relative: str, text: str) -> str:
        """A public file's text as published: measured evidence unchanged but for its clip references."""
        if is_file_reference_file(relative):
            return map_file_references(text, self.rewrite_paths)
        if is_measured(relative):
            return text
        if PurePosixPath(relative).name == COMMAND_FILE:
            return rewrite_command_lines(text, self.rewrite)
        return self.rewrite(text)


def rewrite_command_lines(text: str, rewrite: Callable[[str], str]) -> str:
    """command.txt rewritten argument by argument and quoted again, so that a path that becomes a placeholder stays
    one the shell expands (`"$HF_HUB_CACHE"/models--...`, never `'$HF_HUB_CACHE/models--...'` inside the quotes a
    path with a space needed). Comment lines, and a command line in bash's $'...' quoting (which shlex does not
    read back), are rewritten as text."""
    lines = []
    for line in text.split("\n"):
        if line.startswith("#") or not line.strip() or "$'" in line:
            lines.append(rewrite(line))
            continue
        try:
            argv = shlex.split(line)
        except ValueError:
            lines.append(rewrite(line))
            continue
        quoted = reproducible_command([rewrite(part) for part in argv]) if argv else ""
        lines.append(quoted if quoted and "\n" not in quoted else rewrite(line))
    return "\n".join(lines)


def source_tree() -> Path | None:
    """This package's source checkout (an editable install), whose path a built-in workload's files would name."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / "pyproject.toml").is_file() else None


def public_map(
    out: Path,
    *,
    workloads: dict[str, Path] | None = None,
    aiperf_executable: str | None = None,
    named: dict[str, Path | str | None] | None = None,
    programs: Sequence[str | None] = (),
    endpoint_hosts: Sequence[str] = (),
) -> PublicMap:
    """The rewrite for one run. `workloads`: name -> the folder its workload file lives in; `named`: placeholder ->
    a path outside the artifacts (`$TRTMC_CHECKOUT`, `$BUNDLE_CACHE`, ...); `endpoint_hosts`: the non-loopback
    hosts of the servers measured, which become `<endpoint-host>`."""
    pairs: list[tuple[str, str]] = []
    for form in path_forms(out):
        pairs += [(form + "/", ""), (form, ".")]
    for name, root in (workloads or {}).items():
        pairs += [(form, f"{WORKLOAD_DIR}/{name}/{WORKLOAD_FILES_DIR}") for form in path_forms(root)]
    for program in programs:  # a tool found on PATH is named by its bare name, as a user would type it
        if program:
            pairs += [(form, Path(program).name) for form in path_forms(program)]
    if aiperf_executable:
        pairs += [(form, "aiperf") for form in path_forms(aiperf_executable)]
        pairs += [(form, "$AIPERF_VENV") for form in path_forms(Path(aiperf_executable).parent.parent)]
    for placeholder, path in {**(named or {}), **run_dirs()}.items():
        if path:
            pairs += [(form, placeholder) for form in path_forms(path)]
    paths: dict[str, str] = {}
    for path, new in pairs:  # the first replacement named for a path wins; a generic one (/usr) is never replaced
        if keep_path(path.rstrip("/")):
            paths.setdefault(path, new)
    # The user and host names are never replaced as words: where one is machine-derived the check fails, where it
    # is a word of workload or server text the check warns and the text stays as measured.
    return PublicMap(paths=paths, words={host: "<endpoint-host>" for host in endpoint_hosts})


def rewrite_public_files(root: Path, mapping: PublicMap) -> int:
    """Rewrite every public text file the tool wrote in place (atomically), measured evidence left as measured; the
    number changed. Only files under the names the tool writes at the top of an output folder (OUTPUT_TOP_NAMES)
    are the tool's: a user's own file beside them keeps its bytes."""
    changed = 0
    for path in public_files(root):
        relative = path.relative_to(root).as_posix()
        if relative.split("/", 1)[0] not in OUTPUT_TOP_NAMES:
            continue
        if path.suffix.lower() in BINARY_SUFFIXES or (is_measured(relative) and not is_file_reference_file(relative)):
            continue  # never read: a raw export of many MB stays on disk as it is
        try:  # bounded and never blocking (this runs while stop signals are held back): a file of ours is far smaller
            data = read_regular_file(path, REWRITE_CAP, follow_links=False)
        except UnreadableInput:
            continue  # left as it is; the check still reads it, in pieces, and names any path it holds
        if b"\0" in data[:SNIFF_BYTES]:
            continue
        text = data.decode("utf-8", errors="surrogateescape")
        new = mapping.rewrite_file(relative, text)
        if new != text:
            write_bytes_atomic(path, new.encode("utf-8", errors="surrogateescape"))
            changed += 1
    return changed


def copy_workload(out: Path, name: str, workload_file: Path, relative_files: Sequence[str]) -> Path:
    """workload/<name>/files/: the workload file and the files it names, at the same relative paths. A copy is kept
    only when its sha256 is the source's (a file re-sealed with one answer changed keeps its size); each is written
    through the safe writer, so a link planted in its place is refused, never written through."""
    target = workload_dir(out, name) / WORKLOAD_FILES_DIR
    for relative in [workload_file.name, *relative_files]:
        source = workload_file.parent / relative
        destination = target / relative
        check_inside(destination, out)
        if _same_bytes(destination, source):
            continue
        copy_file_atomic(source, destination)
    return target


def _same_bytes(copy: Path, source: Path) -> bool:
    """Whether `copy` is a regular file (not a link) holding exactly `source`'s bytes."""
    try:
        if not stat.S_ISREG(copy.lstat().st_mode) or copy.stat().st_size != source.stat().st_size:
            return False
    except FileNotFoundError:
        return False
    return file_sha256(copy) == file_sha256(source)


def publish(
    out: Path,
    mapping: PublicMap,
    sentinels: PublicSentinels,
    warn: Callable[[str], None] | None = None,
    render: Render | None = None,
) -> int:
    """Rewrite the public files, render the reports from values already public (`render`, given the rewrite of one
    value), then check them all; the number of files scanned (PublicCheckFailed on a hit; `warn` hears of the user or
    host name as a word of workload or server text, check_public's default otherwise)."""
    rewrite_public_files(out, mapping)
    if render is not None:
        render(mapping.rewrite)
    return check_public(out, sentinels, warn=warn)


def run_public_sentinels(out: Path, mapping: PublicMap, secrets: Sequence[str]) -> PublicSentinels:
    """What the check looks for: every path the map replaces, the user and host names, the secrets."""
    return run_sentinels(out, extra_paths=[path.rstrip("/") for path in mapping.paths], secrets=secrets)


def publish_run(
    out: Path,
    workloads: dict[str, Workload],
    aiperf_executable: str,
    api_key: str | None,
    *,
    trtmc: Path | None = None,
    bundle_cache: Path | None = None,
    server_urls: Sequence[str | None] = (),
    model_dir: Path | None = None,
    warn: Callable[[str], None] | None = None,
    programs: Sequence[str | None] = (),
    render: Render | None = None,
) -> int:
    """A run's artifacts under `out` made portable and public-safe, then checked: copy the workloads in, rewrite,
        check (PublicCheckFailed names file:line for anything left). `trtmc` is the run's TRTMC checkout, `bundle_cache`
        where its bundles were kept (default: out/bundles), `server_urls` the servers the user named (a host that is not
        loopback is never written), `warn` what hears the check's warnings, `programs` the tools the run found and ran
    (TRTMC's, named by their name alone). The number of public text files scanned."""

    for workload in workloads.values():
        files = {clip.file for clip in workload.spec.clips} | {clip.attribution for clip in workload.spec.clips}
        copy_workload(out, workload.name, workload.file, sorted(files))
    # Bundles are never published (a run's own bundles/ folder included): a command names them by placeholder.
    named: dict[str, Path | str | None] = {
        "$TRTMC_CHECKOUT": trtmc,
        "$BUNDLE_CACHE": bundle_cache or out / BUNDLES_DIR,
        "$HF_HUB_CACHE": hub_cache_dir(),  # a checkpoint's tokenizer is read from there
        "$TRTMC_VIDEOQA_SRC": source_tree(),
        "$MODEL_DIR": model_dir,  # a local model served by its path: measured evidence keeps the path as sent
    }
    mapping = public_map(
        out,
        workloads={name: workload.root for name, workload in workloads.items()},
        aiperf_executable=aiperf_executable,
        named=named,
        programs=list(programs),
        endpoint_hosts=remote_hosts(list(server_urls)),
    )
    scanned = publish(out, mapping, run_public_sentinels(out, mapping, known_secrets(api_key)), warn, render)
    for workload in workloads.values():  # the clip manifests now name the published copy: a re-run reuses them
        restamp_prepared(artifacts.workload_dir(out, workload))
    return scanned


def remote_hosts(urls: list[str | None]) -> list[str]:
    """The host names of the given server URLs that are not loopback: a public file never names them."""
    hosts = [urlsplit(url).hostname or "" for url in urls if url]
    return [host for host in hosts if host and not is_loopback_host(host)]
