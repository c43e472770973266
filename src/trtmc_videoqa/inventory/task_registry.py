"""The checkout's own Task registry: every Task id its headers declare, each with its file and line.

Two places declare Task ids in the newer TRTMC layout (read as text, never compiled or run):

- the C API, `core/api/include/trtmc/*.h`: `#define TRTMC_TASK_<NAME> "<id>"`, the string possibly on the next
  line after a backslash, or built by a function-like macro of the same headers (`#define TRTMC_TASK_X MAKE(y)`
  where `MAKE(n)` is string literals and `#n`, as for the streaming Tasks);
- the runtime, `core/runtime/include/trtmc/internal/*.h`: `kTask` constants (`kTask = "<id>"`, or naming a
  `TRTMC_TASK_*` define), each under the interface class (`class IVideoTextToText`) that holds it; and interface
  classes a function-like macro of the same header stamps out (`#define MAKE(Name, Id) class I##Name { ... kTask =
  Id; ... }` with one `MAKE(FramesToTracks, "frames_to_tracks")` per Task), each at the line of its id.

Every declared id gets its contract from tasks.py; an id the table does not know is listed as such with a contract
inferred from its name, so a new Task is visible the day it appears.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .tasks import TASKS, Contract, infer_contract

API_HEADERS = "core/api/include/trtmc"
RUNTIME_HEADERS = "core/runtime/include/trtmc/internal"
MAX_HEADER_BYTES = 4 * 1024 * 1024

_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)(\([^)]*\))?\s*(.*)$")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_CALL = re.compile(r"^(\w+)\s*\(\s*(\w+)\s*\)$")
_TASK_ID = re.compile(r"^[a-z][a-z0-9_]*$")
_KTASK = re.compile(r"\bkTask\w*\s*(?:\[\s*\])?\s*(?:=|\{)\s*(?:\"([^\"]+)\"|(TRTMC_TASK_\w+))")
_CLASS = re.compile(r"^\s*(?:class|struct)\s+(I[A-Z]\w*)\b(?!\s*;)")
# A macro body that stamps out an interface: `class <prefix>##<Param>` and `kTask = <Param>;`.
_MACRO_CLASS = re.compile(r"\b(?:class|struct)\s+(\w*?)\s*##\s*(\w+)")
_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_MACRO_KTASK = re.compile(r"\bkTask\w*\s*(?:=|\{)\s*(\w+)\s*[;}]")


@dataclass(frozen=True)
class DeclaredTask:
    task: str
    file: str  # relative to the checkout
    line: int
    side: str  # "api" (the C API's define) or "runtime" (a kTask constant)
    interface: str | None  # the runtime interface class holding the kTask, if any
    known: bool  # whether tasks.py has its contract
    contract: Contract

    @property
    def is_video_to_text(self) -> bool:
        return "frames" in self.contract.inputs and self.contract.output == "text"

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class TaskDeclarations:
    """What the checkout's headers declare; empty (with `found` False) for a checkout without them."""

    tasks: list[DeclaredTask] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    found: bool = False

    def first(self, task: str) -> DeclaredTask | None:
        """The API declaration of the Task when there is one, else its runtime one."""
        hits = [d for d in self.tasks if d.task == task]
        return next((d for d in hits if d.side == "api"), hits[0] if hits else None)

    def ids(self) -> list[str]:
        return sorted({d.task for d in self.tasks})

    def video_to_text(self) -> list[DeclaredTask]:
        """One declaration per video-to-text Task id, the API's first."""
        return [d for task in self.ids() if (d := self.first(task)) is not None and d.is_video_to_text]

    def interface_tasks(self) -> dict[str, str]:
        """Runtime interface class name to the Task id its kTask declares."""
        return {d.interface: d.task for d in self.tasks if d.interface}


def interface_name(task: str) -> str:
    """The runtime interface TRTMC names after a Task id: video_text_to_text -> IVideoTextToText."""
    return "I" + "".join(word.capitalize() for word in task.split("_"))


def read_task_declarations(root: Path) -> TaskDeclarations:
    out = TaskDeclarations()
    api = _headers(root, API_HEADERS, out)
    runtime = _headers(root, RUNTIME_HEADERS, out)
    defines: dict[str, str] = {}
    for rel, lines in api:
        out.tasks.extend(_api_tasks(rel, lines, defines))
    for rel, lines in runtime:
        out.tasks.extend(_runtime_tasks(rel, lines, defines))
    out.found = bool(api or runtime)
    return out


def _headers(root: Path, folder: str, out: TaskDeclarations) -> list[tuple[str, list[str]]]:
    base = root / folder
    if not base.is_dir() or base.is_symlink():
        return []
    found: list[tuple[str, list[str]]] = []
    for path in sorted(base.glob("*.h")):
        rel = f"{folder}/{path.name}"
        try:
            if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_HEADER_BYTES:
                out.problems.append(f"{rel}: not a plain header file of at most {MAX_HEADER_BYTES} bytes; not read")
                continue
            found.append((rel, path.read_text(encoding="utf-8").splitlines()))
        except (OSError, UnicodeDecodeError) as error:
            out.problems.append(f"{rel}: unreadable ({type(error).__name__}); its Task ids are unknown")
    return found


def _logical_lines(lines: list[str]) -> list[tuple[int, str]]:
    """Lines joined across backslash continuations, each with the number of its first physical line."""
    joined: list[tuple[int, str]] = []
    start, parts = 0, list[str]()
    for number, line in enumerate(lines, start=1):
        if not parts:
            start = number
        if line.rstrip().endswith("\\"):
            parts.append(line.rstrip()[:-1])
            continue
        parts.append(line)
        joined.append((start, " ".join(parts)))
        parts = []
    if parts:
        joined.append((start, " ".join(parts)))
    return joined


def _api_tasks(rel: str, lines: list[str], defines: dict[str, str]) -> list[DeclaredTask]:
    """`#define TRTMC_TASK_*` lines; `defines` collects every define's body (macros are read across headers)."""
    logical = [(n, m) for n, text in _logical_lines(lines) if (m := _DEFINE.match(text))]
    for _, match in logical:
        name, params, body = match.groups()
        defines[name + ("()" if params else "")] = f"{params or ''}\x00{body.strip()}"
    found: list[DeclaredTask] = []
    for number, match in logical:
        name, params, body = match.groups()
        if params or not name.startswith("TRTMC_TASK_"):
            continue
        task = _expand(body.strip(), defines)
        if task and _TASK_ID.match(task):
            found.append(_declared(task, rel, number, "api", None))
    return found


def _expand(body: str, defines: dict[str, str], depth: int = 0) -> str | None:
    """A define's string value: string literals, another define, or one call of a function-like macro built of
    string literals and `#param`. Anything else would need a preprocessor, and is not guessed."""
    if body.startswith('"'):
        return "".join(_STRING.findall(body))
    if body in defines and depth < 8:
        return _expand(defines[body].split("\x00", 1)[1], defines, depth + 1)
    call = _CALL.match(body)
    if call is None or f"{call.group(1)}()" not in defines:
        return None
    params, macro_body = defines[f"{call.group(1)}()"].split("\x00", 1)
    names = [p.strip() for p in params.strip("()").split(",")]
    if len(names) != 1:
        return None
    parts = re.findall(r'"(?:[^"\\]|\\.)*"|#\s*\w+|\w+', macro_body)
    value = ""
    for part in parts:
        if part.startswith('"'):
            value += part[1:-1]
        elif part.startswith("#") and part[1:].strip() == names[0]:
            value += call.group(2)
        else:
            return None
    return value


def _runtime_tasks(rel: str, lines: list[str], defines: dict[str, str]) -> list[DeclaredTask]:
    found: list[DeclaredTask] = []
    interface: str | None = None
    for number, line in enumerate(lines, start=1):
        if klass := _CLASS.match(line):
            interface = klass.group(1)
        match = _KTASK.search(line)
        if match is None:
            continue
        task = match.group(1) or _expand(match.group(2), defines)
        if task and _TASK_ID.match(task):
            found.append(_declared(task, rel, number, "runtime", interface))
    found.extend(_macro_interfaces(rel, lines, defines))
    return sorted(found, key=lambda d: d.line)


def _interface_macros(lines: list[str]) -> dict[str, tuple[int, int, str]]:
    """Function-like macros of the header whose body stamps out a Task interface: macro name to (index of its
    interface-name parameter, index of its Task-id parameter, class name prefix)."""
    macros: dict[str, tuple[int, int, str]] = {}
    for _, text in _logical_lines(lines):
        match = _DEFINE.match(text)
        if match is None or not match.group(2):
            continue
        params = [p.strip() for p in match.group(2).strip("()").split(",")]
        klass, ktask = _MACRO_CLASS.search(match.group(3)), _MACRO_KTASK.search(match.group(3))
        if klass and ktask and klass.group(2) in params and ktask.group(1) in params:
            macros[match.group(1)] = (params.index(klass.group(2)), params.index(ktask.group(1)), klass.group(1))
    return macros


def _macro_interfaces(rel: str, lines: list[str], defines: dict[str, str]) -> list[DeclaredTask]:
    """Each use of such a macro (its arguments possibly over several lines), at the line of its Task id."""
    macros = _interface_macros(lines)
    if not macros:
        return []
    text = "\n".join(lines)
    found: list[DeclaredTask] = []
    for use in re.finditer(rf"^[ \t]*({'|'.join(map(re.escape, macros))})[ \t]*\(", text, re.MULTILINE):
        args = _call_arguments(text, use.end())
        name_at, id_at, prefix = macros[use.group(1)]
        if args is None or max(name_at, id_at) >= len(args):
            continue
        (name, _), (value, offset) = args[name_at], args[id_at]
        task = _expand(value, defines)
        if task and _TASK_ID.match(task) and re.fullmatch(r"\w+", name):
            line = text.count("\n", 0, offset) + 1
            found.append(_declared(task, rel, line, "runtime", f"{prefix}{name}"))
    return found


def _call_arguments(text: str, start: int) -> list[tuple[str, int]] | None:
    """The top-level arguments of a macro call whose `(` ends just before `start`, each stripped, with its offset;
    None when the call is not closed."""
    args: list[tuple[str, int]] = []
    depth, begin, index = 0, start, start
    while index < len(text):
        char = text[index]
        if char == '"':  # a string literal: its commas and parentheses are text
            closing = _LITERAL.match(text, index)
            index = closing.end() if closing else index + 1
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}" and depth:
            depth -= 1
        elif char in ",)" and not depth:
            raw = text[begin:index]
            args.append((raw.strip(), begin + len(raw) - len(raw.lstrip())))
            if char == ")":
                return args
            begin = index + 1
        index += 1
    return None


def _declared(task: str, rel: str, line: int, side: str, interface: str | None) -> DeclaredTask:
    known = task in TASKS
    return DeclaredTask(task, rel, line, side, interface, known, TASKS[task] if known else infer_contract(task))


def interface_map(declared: TaskDeclarations) -> dict[str, str]:
    """Runtime interface name to Task id: the headers' own kTask classes, else TRTMC's naming of a known id."""
    ids = set(TASKS) | set(declared.ids())
    return {interface_name(task): task for task in sorted(ids)} | declared.interface_tasks()
