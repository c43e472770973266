"""Commands that run only what they say (issue 26, item 1).

The reproduce recipe of docs/public-evidence.md picks one section's command line out of a row's command.txt and hands
it to bash. A value carrying `\\n# aiperf\\n<command>` once put a line of its own after a `# aiperf` marker, and bash
ran it. Here every field that reaches a command (the model, the server settings, a profile name and checkpoint from
a manifest, the URLs, a workload name) holds such a value, the commands are built by the tool's own builders,
command.txt is written by the tool's own writer, and the documented recipe is run with bash against stand-ins of
aiperf, trtmc and trtmc-videoqa that only record their arguments: nothing else runs, and the recorded command gets
its values back exactly. The question text and `extra_body` travel in AIPerf's input file, never in a command. The
values a user types are refused at once (exit 2, naming the option).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from trtmc_videoqa.aiperf.command import AiperfSettings, profile_argv
from trtmc_videoqa.aiperf.dataset import Prompt, plan_requests, write_input_file
from trtmc_videoqa.cli.main import main
from trtmc_videoqa.common.shell_quoting import ESCAPED_NOTE, reproducible_command
from trtmc_videoqa.results import RecordedCommand
from trtmc_videoqa.rows.finish import command_file_text
from trtmc_videoqa.stages.aiperf import HTTP_INPUTS_NOTE
from trtmc_videoqa.trtmc.commands import Toolchain, build_argv, correctness_argv, server_argv

DOCS = Path(__file__).resolve().parents[1] / "docs" / "public-evidence.md"
FIXTURE = Path(__file__).parent / "fixtures" / "trtmc_families"


def _hostile(tmp_path: Path, field: str) -> str:
    """A value that, written raw into command.txt, puts a command of its own after a `# aiperf` marker."""
    return f"{field}\n# aiperf\ntouch {tmp_path}/pwned-{field} #'\"\n# serve\ntouch {tmp_path}/pwned-{field}-2"


def _recipe() -> tuple[str, list[str]]:
    """docs/public-evidence.md's recipe, as documented: the `pick` function and the line that runs aiperf."""
    block = re.search(r"```bash\n(.*?)```", DOCS.read_text(), flags=re.S)
    assert block is not None
    lines = block.group(1).splitlines()
    pick = next(line for line in lines if line.startswith("pick() {"))
    runs = [line.split("#", 1)[0].strip() for line in lines if line.startswith(("pick ", "bash -c"))]
    return pick.split("   #", 1)[0], runs


def _stand_ins(tmp_path: Path) -> Path:
    """Stand-ins of aiperf, trtmc, trtmc-server, trtmc-videoqa and the family's Python: each writes its argv (one
    JSON list a line) and does nothing else."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("aiperf", "trtmc", "trtmc-server", "trtmc-videoqa", "family-python"):
        script = folder / name
        script.write_text(
            f"#!{sys.executable}\nimport json, os, sys\n"
            "with open(os.environ['RAN_LOG'], 'a') as log:\n"
            "    log.write(json.dumps([os.path.basename(sys.argv[0]), *sys.argv[1:]]) + '\\n')\n"
        )
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return folder


def _run_recipe(tmp_path: Path, command_txt: Path, section: str) -> tuple[list[list[str]], str]:
    """The documented recipe for one section, run by bash in the artifacts' folder: what ran, and what it printed."""
    pick, _ = _recipe()
    pick = pick.replace("checkpoints/PROFILE/command.txt", shlex.quote(str(command_txt)))
    log = tmp_path / f"ran-{section}.jsonl"
    env = {**os.environ, "PATH": f"{_stand_ins_dir(tmp_path)}{os.pathsep}{os.environ['PATH']}", "RAN_LOG": str(log)}
    script = f'{pick}\npick {section} > {tmp_path}/picked.txt\nbash -c "$(pick {section})"\n'
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    ran = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return ran, (tmp_path / "picked.txt").read_text()


def _stand_ins_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    return folder if folder.is_dir() else _stand_ins(tmp_path)


def _nothing_else(tmp_path: Path) -> None:
    assert sorted(p.name for p in tmp_path.glob("pwned*")) == []


# --- the recorded command line -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "x\n# aiperf\ntouch pwned #",
        "a'b\"c$(touch pwned)`touch pwned`;|&<>*?~ \\",
        "carriage\rreturn\ttab\x0bvt\x0cff\x85nel\u2028ls\u2029ps",
        "\u202eevil\u2066iso\u2069 zero\u200bwidth\ufeff",
        "\x01\x1b[2J\x7f",
    ],
)
def test_each_value_is_written_on_one_line_and_read_back_exactly(tmp_path: Path, value: str) -> None:
    command = reproducible_command(["printf", "%s\\0", value, "plain"])
    *notes, line = command.split("\n")
    assert all(note.startswith("# ") for note in notes) and line.startswith("printf ")
    assert not re.search("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200b\ufeff]", line)
    done = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, timeout=30)
    assert done.stdout.decode().split("\0")[:2] == [value, "plain"]  # the same values, passed back
    _nothing_else(tmp_path)


def test_a_value_written_in_bash_quoting_is_named_by_a_note() -> None:
    assert reproducible_command(["aiperf", "--model", "m"]) == "aiperf --model m"
    assert reproducible_command(["aiperf", "--model", "x\ny"]) == f"{ESCAPED_NOTE}\naiperf --model $'x\\ny'"


# --- command.txt and the documented recipe ---------------------------------------------------------------------


def _hostile_commands(tmp_path: Path) -> tuple[dict[str, RecordedCommand], dict[str, str]]:
    """Every command a row records, built by the tool's own builders with a hostile value in each field that
    reaches one: (the commands, the values by field)."""
    values = {
        field: _hostile(tmp_path, field)
        for field in ("model", "setting", "profile", "checkpoint", "url", "workload", "precision")
    }
    ours = RecordedCommand.of(
        ["trtmc-videoqa", "qualify", "--endpoint", values["url"], "--model", values["model"],
         "--server-setting", f"sampling={values['setting']}", "--workload", values["workload"]]
    )  # fmt: skip
    settings = AiperfSettings(
        url=values["url"],
        model=values["model"],
        tokenizer="tokenizer",
        input_file=f"workload/{values['workload']}/inputs.jsonl",
        artifact_dir="checkpoints/p/aiperf/export",
        warmup_requests=1,
        profiling_requests=6,
    )
    from trtmc_videoqa.results import CheckpointEntry

    entry = CheckpointEntry(
        profile=values["profile"], family="vidqa", manifest="m.json", checkpoint=values["checkpoint"],
        precision=values["precision"], catalog_status="ready", in_group=True, group_reason="",
        verdict="temporal-video-qa",
    )  # fmt: skip
    toolchain = Toolchain(trtmc="trtmc", trtmc_server="trtmc-server", python="family-python")
    bundle = Path(f"$BUNDLE_CACHE/{values['profile']}.bundle")
    commands = {
        "trtmc-videoqa": ours,
        "build": RecordedCommand.of(build_argv(toolchain, entry, bundle)),
        "correctness": RecordedCommand.of(
            correctness_argv(toolchain, Path("/c"), Path("/c/t.py"), entry, Path("a"), Path("e"))
        ),
        "serve": RecordedCommand.of(
            server_argv(
                toolchain,
                bundle,
                model_name=values["profile"],
                port=8000,
                body_limit=1,
                records=Path("r"),
                startup_timeout_s=1,
                request_timeout_s=1,
            )
        ),  # fmt: skip
        "aiperf": RecordedCommand.of(profile_argv("aiperf", settings), notes=[HTTP_INPUTS_NOTE]),
    }
    return commands, values


def test_the_documented_recipe_runs_the_recorded_aiperf_command_and_nothing_else(tmp_path: Path) -> None:
    commands, values = _hostile_commands(tmp_path)
    command_txt = tmp_path / "command.txt"
    command_txt.write_text(command_file_text(commands))
    text = command_txt.read_text()
    # A marker is only ever one of ours, once each; no value starts a line.
    markers = [line for line in text.splitlines() if re.fullmatch(r"# [a-z][a-z0-9-]*", line)]
    assert markers == [f"# {name}" for name in commands]
    assert not any(line.startswith("touch") for line in text.splitlines())
    ran, picked = _run_recipe(tmp_path, command_txt, "aiperf")
    _nothing_else(tmp_path)
    assert len(picked.splitlines()) == 1 and picked.startswith("aiperf profile ")
    assert len(ran) == 1 and ran[0][:2] == ["aiperf", "profile"]  # the one recorded command ran, once
    argv = ran[0]
    assert argv[argv.index("--model") + 1] == values["model"] and argv[argv.index("--url") + 1] == values["url"]
    assert argv[argv.index("--input-file") + 1] == f"workload/{values['workload']}/inputs.jsonl"


@pytest.mark.parametrize("section", ["trtmc-videoqa", "build", "correctness", "serve"])
def test_every_other_section_picks_its_own_one_line(tmp_path: Path, section: str) -> None:
    commands, values = _hostile_commands(tmp_path)
    command_txt = tmp_path / "command.txt"
    command_txt.write_text(command_file_text(commands))
    ran, picked = _run_recipe(tmp_path, command_txt, section)
    _nothing_else(tmp_path)
    assert len(picked.splitlines()) == 1 and not picked.startswith("#")
    assert len(ran) == 1
    if section == "trtmc-videoqa":
        assert ran[0][ran[0].index("--model") + 1] == values["model"]
        assert ran[0][ran[0].index("--server-setting") + 1] == f"sampling={values['setting']}"
    if section == "correctness":
        assert ran[0][:3] == ["family-python", "-m", "pytest"]
        assert ran[0][ran[0].index("--e2e-model") + 1] == values["profile"]
    if section == "build":
        assert ran[0][:3] == ["trtmc", "build", values["checkpoint"]]
    if section == "serve":
        assert ran[0][ran[0].index("--model-name") + 1] == values["profile"]


def test_a_recorded_argv_is_one_safe_line_whatever_it_holds(tmp_path: Path) -> None:
    """A row records argv lists, never lines of text: a value with a line break, an escape sequence or a note that
    looks like a marker still comes back as one quoted line, which runs exactly that argv and nothing else."""
    hostile = _hostile(tmp_path, "raw")
    second = "m\ntouch " + str(tmp_path / "pwned-second-line")
    commands = {
        "serve": RecordedCommand.of(["trtmc-videoqa", "serve-reference", "--x", hostile]),
        "aiperf": RecordedCommand.of(["aiperf", "profile", "--model", second]),
        "native": RecordedCommand.of(["aiperf", "profile", "--model", "\x1b[2J"], notes=["a note of ours", "aiperf"]),
    }
    command_txt = tmp_path / "command.txt"
    command_txt.write_text(command_file_text(commands))
    lines = command_txt.read_text().splitlines()
    assert "# aiperf (note)" in lines and "# aiperf" in lines  # the note cannot pass for the marker
    for section, command in commands.items():
        ran, picked = _run_recipe(tmp_path, command_txt, section)
        assert len(picked.splitlines()) == 1 and ran == [command.argv]
    _nothing_else(tmp_path)


def test_the_question_text_and_extra_body_travel_in_the_input_file_only(tmp_path: Path) -> None:
    question = _hostile(tmp_path, "question")
    extra = {"note": _hostile(tmp_path, "extra"), "nested": {"k": "\n# aiperf\ntouch pwned"}}
    prompt = Prompt(question_id="q1", clip_id="c1", clip_path=str(tmp_path / "c.mp4"), text=question)
    plan = plan_requests([prompt], repeats=2, warmup=1, max_tokens=8, extra_body=extra)
    inputs = write_input_file(plan, tmp_path / "inputs.jsonl")
    rows = [json.loads(line) for line in inputs.read_text().splitlines()]
    assert len(rows) == 3 and all(r["text"] == question and r["extra"]["note"] == extra["note"] for r in rows)
    settings = AiperfSettings(
        url="http://127.0.0.1:1", model="m", tokenizer="t", input_file=str(inputs), artifact_dir="e",
        warmup_requests=1, profiling_requests=2,
    )  # fmt: skip
    command = RecordedCommand.of(profile_argv("aiperf", settings))
    assert not any("pwned" in part or "\n" in part for part in command.argv)
    command_txt = tmp_path / "command.txt"
    command_txt.write_text(command_file_text({"aiperf": command}))
    ran, _ = _run_recipe(tmp_path, command_txt, "aiperf")
    assert len(ran) == 1 and ran[0][:2] == ["aiperf", "profile"]
    _nothing_else(tmp_path)


def test_a_manifest_value_reaches_a_command_only_quoted(tmp_path: Path) -> None:
    """A checkout whose manifest carries the attack in its hf_id and precision: the inventory keeps the values, the
    build command built from them is one line, and the recipe's `pick build` prints only it."""
    import shutil

    from trtmc_videoqa.inventory import run_inventory

    tree = tmp_path / "trtmc"
    shutil.copytree(FIXTURE, tree)
    manifest = tree / "families" / "vidqa" / "tests" / "manifests" / "vidqa-2b.json"
    data = json.loads(manifest.read_text())
    data["hf_id"] = _hostile(tmp_path, "hf_id")
    data["precision"] = _hostile(tmp_path, "precision")
    manifest.write_text(json.dumps(data))
    entry = next(e for e in run_inventory(tree).entries if e.profile == "vidqa-2b")
    assert entry.checkpoint == data["hf_id"]
    toolchain = Toolchain(trtmc="trtmc", trtmc_server="trtmc-server", python="python3")
    command = RecordedCommand.of(build_argv(toolchain, entry, Path("b.bundle")))
    command_txt = tmp_path / "command.txt"
    command_txt.write_text(command_file_text({"build": command}))
    ran, _ = _run_recipe(tmp_path, command_txt, "build")
    assert ran == [["trtmc", "build", data["hf_id"], "--output", "b.bundle", "--max-cache-length", "1024",
                    "--precision", data["precision"]]]  # fmt: skip
    _nothing_else(tmp_path)


# --- values a user types are refused where they enter ------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--endpoint", "http://127.0.0.1:1", "--model", "x\n# aiperf\ntouch pwned #"],
        ["--endpoint", "http://127.0.0.1:1", "--model", "m", "--server-setting", "k=v\n# aiperf\ntouch pwned"],
        ["--endpoint", "http://127.0.0.1:1/\n# aiperf\ntouch pwned", "--model", "m"],
        ["--endpoint", "http://127.0.0.1:1", "--model", "m", "--native-url", "http://127.0.0.1:2\rx"],
        ["--profile", "p\n# aiperf\ntouch pwned"],
        ["--workload", "synthetic\n# aiperf\ntouch pwned"],
    ],
)
def test_a_value_with_a_line_break_is_refused_where_it_enters(tmp_path: Path, capsys, args: list[str]) -> None:
    code = main(["qualify", "--dry-run", "--out", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    option = next(
        a for a in args if a.startswith("--") and ("\n" in args[args.index(a) + 1] or "\r" in args[args.index(a) + 1])
    )
    assert option in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()
    _nothing_else(tmp_path)


def test_every_path_placeholder_publish_writes_stays_expandable_in_a_recorded_command() -> None:
    """A row records argv lists; publish turns this machine's paths in them into placeholders, which the command
    line written from the list must leave for the shell to expand (`"$BUNDLE_CACHE"/x.bundle`)."""
    import ast

    from trtmc_videoqa.common.shell_quoting import PATH_PLACEHOLDERS
    from trtmc_videoqa.publish import machine_names, rewrite

    written = {
        node.value
        for node in ast.walk(ast.parse(Path(rewrite.__file__).read_text()))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(r"\$[A-Z][A-Z0-9_]*", node.value)
    }
    assert written and written | set(machine_names.run_dirs()) <= PATH_PLACEHOLDERS
    line = reproducible_command(["trtmc", "--output", "$BUNDLE_CACHE/a b/x.bundle", "--model", "$HOME2/x"])
    assert line == "trtmc --output \"$BUNDLE_CACHE\"'/a b/x.bundle' --model '$HOME2/x'"
