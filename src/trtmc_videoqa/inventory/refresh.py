"""`trtmc-videoqa refresh`: audit the newest TRTMC main beside the pinned commit and say what changed in the group.

Main's ref is fetched with git (`fetch --depth 1`) into a bare cache folder and exported from there (`git archive`)
into a tree of that commit, which is then audited like any checkout. The pinned side is the tree given with
`--trtmc` (its commit from its own .git, else the pin file's) or, without one, the pin's commit fetched the same
way. Both inventories, the reconciliation as JSON and a Markdown page that opens with one line are written.

What it writes is public (refresh.yml uploads it every week) and passes `report --check-public`: a tree is named
by a relative path as given or a placeholder (`$TRTMC_CHECKOUT`, `$TRTMC_MAIN_TREE`, `$GIT_CACHE/trees/<sha>`), a
local repository as `$TRTMC_REPOSITORY`, never by an absolute path of this machine (issue 26).
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict

from ..common.argv_values import not_an_option
from ..common.atomic_write import write_model_atomic, write_text_atomic
from ..common.errors import EXIT_FAILED, EXIT_OK, BadInput, UserError
from ..common.pins import load_pins
from ..results import GroupReconciliation
from ..results.layout import MAIN_INVENTORY_FILE, PINNED_INVENTORY_FILE, RECONCILIATION_FILE, RECONCILIATION_MD
from . import run_inventory
from .group_changes import group_reconciliation, render_reconciliation_markdown
from .tree import CHECKOUT_PLACEHOLDER, shown_path

# --fail-on-new-capable: a scheduled job turns red exactly when a capable checkpoint appears; the watch's check not
# held, so the verdict code every command gives for that (3)
EXIT_NEW_CAPABLE = EXIT_FAILED
GIT_TIMEOUT_S = 900
_SHA = re.compile(r"[0-9a-f]{40}")
MAIN_TREE_PLACEHOLDER = "$TRTMC_MAIN_TREE"
REPOSITORY_PLACEHOLDER = "$TRTMC_REPOSITORY"
CACHE_PLACEHOLDER = "$GIT_CACHE"


class GitProblem(UserError):
    """A ref or commit that git could not fetch or export; the message names the repository and the fix."""


class RefreshRequest(BaseModel):
    """What `trtmc-videoqa refresh` is asked: the pinned side, the ref of main and where it comes from, the output."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    out: Path
    ref: str  # the ref compared with the pin
    trtmc: Path | None  # the pinned checkout; None: the pin's commit, fetched
    main: str | None  # the repository main is fetched from; None: the pin file's
    main_tree: Path | None  # the ref's tree, already fetched (no git), with main_commit
    main_commit: str | None
    cache: Path | None  # the git cache; None: default_cache()
    fail_on_new_capable: bool


@dataclass(frozen=True)
class Side:
    tree: Path
    commit: str
    source: str  # where the commit came from
    shown: str  # how the inventory names the tree: never an absolute path


def shown_repository(source: str) -> str:
    """A repository as a public file names it: a local folder by its relative path or $TRTMC_REPOSITORY, a URL
    without any user or password in it."""
    if Path(source).exists():
        return shown_path(source, REPOSITORY_PLACEHOLDER)
    parts = urlsplit(source)
    if parts.hostname and (parts.username or parts.password):
        host = parts.hostname + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=host))
    return source


def cached_tree(sha: str) -> str:
    return f"{CACHE_PLACEHOLDER}/trees/{sha}"


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "trtmc-videoqa" / "git"


def _git(cache: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}  # never wait on a password prompt
    return subprocess.run(
        ["git", "--git-dir", str(cache), *args], capture_output=True, timeout=GIT_TIMEOUT_S, env=env, check=False
    )


def _repository(source: str) -> str:
    """A local folder as an absolute path (git takes it as a repository); a URL as it is."""
    return str(Path(source).resolve()) if Path(source).exists() else source


def fetch_commit(cache: Path, repository: str, ref: str) -> str:
    """`ref` (a branch, tag or full commit) of `repository`, fetched one commit deep into the bare cache; its SHA."""
    if not (cache / "HEAD").is_file():
        cache.mkdir(parents=True, exist_ok=True)
        init = ["git", "init", "--bare", "-q", "--", str(cache)]
        done = subprocess.run(init, capture_output=True, timeout=60, check=False)
        if done.returncode != 0:
            raise GitProblem(f"could not make the git cache {cache}: {done.stderr.decode(errors='replace').strip()}")
    # `--`: whatever the repository and ref say, git reads them as a repository and a refspec, never as options.
    fetched = _git(cache, "fetch", "--depth", "1", "--no-tags", "--quiet", "--", _repository(repository), ref)
    if fetched.returncode != 0:
        why = fetched.stderr.decode(errors="replace").strip().splitlines()
        raise GitProblem(
            f"git could not fetch {ref!r} from {repository}: {why[-1] if why else 'no message'}; check the "
            "repository and ref (--main, --ref), or give the pinned tree with --trtmc"
        )
    sha = _git(cache, "rev-parse", "--verify", "--end-of-options", "FETCH_HEAD").stdout.decode().strip()
    if not _SHA.fullmatch(sha):
        raise GitProblem(f"git fetched {ref!r} from {repository} but named no commit for it")
    return sha


def export_tree(cache: Path, sha: str) -> Path:
    """The files of commit `sha` under the cache (`git archive`, extracted with the data filter: no links out, no
    devices, no absolute paths), once per commit."""
    tree = cache / "trees" / sha
    done_marker = tree.parent / f"{sha}.done"
    if done_marker.is_file():
        return tree
    archive = _git(cache, "archive", "--format=tar", "--", sha)
    if archive.returncode != 0:
        raise GitProblem(f"git could not export {sha}: {archive.stderr.decode(errors='replace').strip()}")
    tree.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout), mode="r:") as tar:
        tar.extractall(tree, filter="data")
    write_text_atomic(done_marker, sha + "\n")
    return tree


def pinned_side(trtmc: Path | None, cache: Path, repository: str) -> Side:
    pin = load_pins().trtmc.commit
    if trtmc is not None:
        from .tree import checkout_commit

        head = checkout_commit(trtmc)
        shown = shown_path(trtmc, CHECKOUT_PLACEHOLDER)
        if head != "unknown":
            return Side(trtmc, head, "git HEAD of the tree given with --trtmc", shown)
        return Side(trtmc, pin, "the pin file (the tree given with --trtmc has no git history)", shown)
    sha = fetch_commit(cache, repository, pin)
    source = f"the pin file, fetched from {shown_repository(repository)}"
    return Side(export_tree(cache, sha), sha, source, cached_tree(sha))


def run_refresh(request: RefreshRequest) -> tuple[GroupReconciliation, Path]:
    """Both sides audited and the reconciliation written: it, and where its Markdown is (the command line prints
    its line and exits by `exit_code`)."""
    pins = load_pins()
    if request.main is not None:
        not_an_option(request.main, "--main", "a git URL or the path of a repository")
    not_an_option(request.ref, "--ref", "a branch, tag or full commit")
    repository = request.main or pins.trtmc.repository
    cache = request.cache or default_cache()
    if request.trtmc is not None and not request.trtmc.is_dir():
        raise BadInput(f"--trtmc {request.trtmc} is not a folder; give the pinned TRTMC checkout")
    pinned = pinned_side(request.trtmc, cache, repository)
    if request.main_tree is not None:  # a tree fetched by someone else (the Dagger engine), with its commit
        if not request.main_commit:
            raise BadInput("--main-tree needs --main-commit SHA: the commit that tree is")
        main_sha, main_tree = request.main_commit, request.main_tree
        main_shown = shown_path(main_tree, MAIN_TREE_PLACEHOLDER)
    else:
        main_sha = fetch_commit(cache, repository, request.ref)
        main_tree, main_shown = export_tree(cache, main_sha), cached_tree(main_sha)
    pinned_inventory = run_inventory(pinned.tree, commit=pinned.commit, shown_as=pinned.shown)
    main_inventory = run_inventory(main_tree, commit=main_sha, shown_as=main_shown)
    reconciliation = group_reconciliation(
        pinned_inventory, main_inventory, main_ref=request.ref, pinned_commit_source=pinned.source
    )
    out = request.out
    write_model_atomic(out / PINNED_INVENTORY_FILE, pinned_inventory)
    write_model_atomic(out / MAIN_INVENTORY_FILE, main_inventory)
    write_model_atomic(out / RECONCILIATION_FILE, reconciliation)
    markdown = write_text_atomic(out / RECONCILIATION_MD, render_reconciliation_markdown(reconciliation))
    return reconciliation, markdown


def exit_code(reconciliation: GroupReconciliation, *, fail_on_new_capable: bool) -> int:
    return EXIT_NEW_CAPABLE if fail_on_new_capable and reconciliation.new_capable else EXIT_OK
