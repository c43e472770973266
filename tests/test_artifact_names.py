"""Every artifact name lives in `results/layout.py` (docs/architecture.md, rules of the house): a string literal that
looks like a file name (`requests.jsonl`, `aiperf/outcome.json`, an f-string such as `f"{clip_id}.json"`) anywhere
else in the package fails here, unless it is a name that is not ours to choose, listed below by module with the
reason. Docstrings and sentences (a literal with a space) are prose, not names. Measured with `ast` on the files
under src/, never by importing them."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from source_scan import parsed, walked

from trtmc_videoqa.aiperf import exports
from trtmc_videoqa.results import layout

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "trtmc_videoqa"
LAYOUT = "results/layout.py"
EXTENSIONS = ["json", "jsonl", "md", "html", "log", "txt", "png", "jpg", "svg", "xml", "yaml", "yml", "csv", "toml"]
EXTENSIONS += ["ini", "cfg", "sh", "py", "pyc", "mp4", "webm", "bundle", "lock", "done", "raw", "tmp", "pid", "gz"]
# A whole literal that is a path or a file name with one of those extensions; an f-string's fields count as `{}`,
# a glob's `*` as a character of the name.
FILE_NAME = re.compile(
    r"(?:[\w.{}<>*:-]+/)*\.?[\w{}<>*:-][\w.{}<>*:-]*\.(?:" + "|".join(EXTENSIONS) + ")",
)

# Names that are not artifacts of an output folder of ours, by module, each group with why it is typed there.
NOT_OURS: dict[str, set[str]] = {
    # AIPerf's own names for what it writes in its export folder: aiperf/ imports only common/, so it keeps a copy
    # of those layout.py names (held equal below); a glob over its per-record files.
    "aiperf/exports.py": {"profile_export_raw.jsonl", "profile_export.jsonl", "inputs.json", "*.jsonl"},
    # pip's record of where the installed AIPerf came from.
    "aiperf/locate.py": {"direct_url.json"},
    # Hugging Face's file names: a tokenizer's (ours is written in that format), a checkpoint's in the hub cache.
    "aiperf/tokenizer.py": {"tokenizer.json", "tokenizer_config.json"},
    "ladders/trtmc.py": {"tokenizer_config.json"},
    "inventory/declared_support.py": {"config.json"},
    "stages/identity/frame_choice.py": {"preprocessor_config.json", "video_preprocessor_config.json"},
    # A TRTMC checkout's own files, read as text or run as they are, and the bundle files TRTMC builds.
    "aiperf_qual/reader_check.py": {"accuracy_recovery.py"},
    "inventory/audit.py": {"MODEL.toml", "tests/e2e/models/{}/MODEL.toml"},
    "inventory/catalog.py": {"apps/benchmark/trtmc_benchmark/task_adapters.py"},
    "inventory/family_declarations.py": {"families/{}/support.py"},
    "inventory/family_source.py": {"support.py"},
    "inventory/server_source.py": {"apps/server/python/trtmc_server/schemas.py"},
    "inventory/tree.py": {"families/*/tests/manifests/*.json", "tests/e2e/models/*/manifests/*.json"},
    "trtmc/commands.py": {"{}.bundle", "*.bundle", "test_e2e.py", "test_*_e2e.py", "__main__.py"},
    # This repository's files and the package's own data: the pin file, the source checkout's marker, the
    # self-test's plan, the committed clips, the container recipes and what the Dagger module leaves out.
    "common/pins.py": {"pins.toml"},
    "publish/rewrite.py": {"pyproject.toml"},
    "plan/self_test.py": {"self_test_plan.json"},
    "workloads/recipe.py": {"bigbuckbunny-320x180.mp4", "bigbuckbunny-320x180-reversed.mp4"},
    "dagger_module.py": {
        "{}/system-packages.sh",
        "{}/build-trtmc.sh",
        "{}/inventory-rows.sh",
        "{}/install-comparison.sh",
        "system-packages.sh",
        "build-trtmc.sh",
    },
    "dagger_plan.py": {
        "{}/qualify-one.sh",
        "**/*.pyc",
        "{}/install-python.sh",
        # what install-python.sh's dependencies phase reads, copied in before the rest of the source
        "pyproject.toml",
        "containers/install-python.sh",
        "containers/recipe.py",
        "containers/pins.toml",
    },
    # The shipped control models' folders (not output folders): Hugging Face's names there (the model card is its
    # README.md), the committed base configuration, and the training record each folder keeps.
    "cli/control_model.py": {"config.json"},
    "controls/build.py": {"base.json"},
    "controls/shipped.py": {"training.json", "README.md"},
    # Metavariables in --help: what the user gives, not what we write.
    "cli/inventory.py": {"OLD.json"},
    "cli/probe.py": {"FILE.png"},
    # The output lock's own file (`LOCK_NAME`): common/ imports nothing of ours, so the lock keeps its name.
    "common/output_lock.py": {".trtmc-videoqa.lock"},
    # The refresh cache's marker beside each tree it exported: a cache folder, not an output folder.
    "inventory/refresh.py": {"{}.done"},
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


@functools.cache  # both tests read every module: each is parsed once (source_scan.py, shared with the other scans)
def literals(source: str, filename: str = "<source>") -> tuple[tuple[int, str], ...]:
    """(line, text) of every string literal but docstrings; an f-string whole, each field as `{}`."""
    tree = parsed(source, filename)
    skipped = _docstrings(tree)
    found = []
    nodes = walked(source, filename)
    for node in nodes:
        if isinstance(node, ast.JoinedStr):
            skipped |= {id(value) for value in node.values}
            found.append((node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)))
    for node in nodes:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            found.append((node.lineno, node.value))
    return tuple(found)


def artifact_names(package: Path, allowed: dict[str, set[str]]) -> list[str]:
    """`module:line: name` for each file-name literal outside results/layout.py that `allowed` does not list."""
    found = []
    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(package).as_posix()
        if module == LAYOUT:
            continue
        for line, text in literals(path.read_text(), str(path)):
            if FILE_NAME.fullmatch(text) and text not in allowed.get(module, set()):
                found.append(f"{module}:{line}: {text}")
    return sorted(found)


def test_every_artifact_name_lives_in_the_layout() -> None:
    found = artifact_names(PACKAGE, NOT_OURS)
    assert not found, (
        f"artifact names typed outside {LAYOUT}: name them there and import them (or, for a name that is not "
        "ours, list it in NOT_OURS with why)\n" + "\n".join(found)
    )


def test_each_name_listed_as_not_ours_is_still_there() -> None:
    """The list shrinks with the code: an entry nothing uses any more is dropped."""
    present = {
        path.relative_to(PACKAGE).as_posix(): {text for _, text in literals(path.read_text(), str(path))}
        for path in PACKAGE.rglob("*.py")
    }
    stale = sorted(f"{module}: {name}" for module, names in NOT_OURS.items() for name in names - present[module])
    assert not stale, "listed in NOT_OURS but no longer in the module: drop them\n" + "\n".join(stale)


def test_aiperf_s_copy_of_its_own_names_is_the_layout_s() -> None:
    assert exports.RAW_EXPORT == layout.AIPERF_RAW_EXPORT
    assert exports.RECORDS_EXPORT == layout.AIPERF_RECORDS_EXPORT
    assert exports.INPUTS_EXPORT == layout.AIPERF_INPUTS_EXPORT
    assert exports.RAW_RECORDS_DIR == layout.AIPERF_RAW_RECORDS_DIR


def test_the_finder_names_every_form_an_artifact_name_took(tmp_path: Path) -> None:
    """The literals issue 32 found typed out (`requests.jsonl` as a path part and as evidence, `grading.json`,
    `aiperf/outcome.json`, `inventory.json` in a message's f-string) and a name built by an f-string are found;
    docstrings, sentences, suffixes, module names and listed names are not."""
    package = tmp_path / "pkg"
    (package / "stages").mkdir(parents=True)
    (package / "results").mkdir()
    (package / "results" / "layout.py").write_text('REQUESTS_FILE = "requests.jsonl"\n')
    (package / "stages" / "aiperf.py").write_text(
        '"""Writes requests.jsonl and grading.json."""\n'
        "def stage(row_dir, clip):\n"
        '    """Its requests.jsonl."""\n'
        '    (row_dir / "requests.jsonl").write_text("")\n'
        '    evidence = ["aiperf/outcome.json", "grading.json"]\n'
        "    print(f\"wrote {row_dir / 'inventory.json'}\")\n"
        '    manifest = f"{clip}.json"\n'
        '    note = "see requests.jsonl for every answer"\n'
        '    suffixes = (".json", ".mp4")\n'
        '    module = "trtmc_videoqa.plan"\n'
        '    theirs = "config.json"\n'
    )
    found = artifact_names(package, {"stages/aiperf.py": {"config.json"}})
    assert found == [
        "stages/aiperf.py:4: requests.jsonl",
        "stages/aiperf.py:5: aiperf/outcome.json",
        "stages/aiperf.py:5: grading.json",
        "stages/aiperf.py:6: inventory.json",
        "stages/aiperf.py:7: {}.json",
    ]
