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
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from .bounded_source import Unreadable, note_unreadable, read_text
from .c_defines import Defines, InterfaceMacro, define_of, expand, interface_macro, macro_uses, pieces
from .c_tokens import Token
from .tasks import TASKS, Contract, infer_contract

API_HEADERS = "core/api/include/trtmc"
RUNTIME_HEADERS = "core/runtime/include/trtmc/internal"
MAX_HEADER_BYTES = 4 * 1024 * 1024

_TASK_ID = re.compile(r"^[a-z][a-z0-9_]*$")
_INTERFACE = re.compile(r"I[A-Z]\w*")
_UNREAD_COST = "its Task ids are unknown"


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
    defines: Defines = {}
    for headers, read in ((api, _api_tasks), (runtime, _runtime_tasks)):
        for rel, text in headers:
            try:
                out.tasks.extend(read(rel, text, defines))  # a file's defines are added once it is read whole
            except Unreadable as refused:  # brackets nested past the budget: its ids are left out
                note_unreadable(refused, _UNREAD_COST)
                out.problems.append(f"{rel}: unreadable ({refused.name}); {_UNREAD_COST}")
    out.found = bool(api or runtime)
    return out


def _headers(root: Path, folder: str, out: TaskDeclarations) -> list[tuple[str, str]]:
    """Each plain header of the folder as text, within budget (bounded_source.py); the others named."""
    base = root / folder
    if not base.is_dir() or base.is_symlink():
        return []
    found: list[tuple[str, str]] = []
    for path in sorted(base.glob("*.h")):
        rel = f"{folder}/{path.name}"
        if path.is_symlink() or not path.is_file():
            refused = Unreadable(
                rel, "not a plain file", "a link or not a regular file: headers are read as plain files"
            )
            note_unreadable(refused, _UNREAD_COST)
            out.problems.append(f"{rel}: not a plain header file of at most {MAX_HEADER_BYTES} bytes; not read")
            continue
        try:
            found.append((rel, read_text(root, rel, MAX_HEADER_BYTES, _UNREAD_COST)))
        except Unreadable as refused:
            out.problems.append(f"{rel}: unreadable ({refused.name}); {_UNREAD_COST}")
    return found


def _api_tasks(rel: str, text: str, defines: Defines) -> list[DeclaredTask]:
    """`#define TRTMC_TASK_*` lines; `defines` collects every define (macros are read across headers)."""
    found = [define for piece in pieces(text, rel) if isinstance(piece, list) and (define := define_of(piece))]
    defines.update({define.key: define for define in found})
    declared: list[DeclaredTask] = []
    for define in found:
        if define.params is None and define.name.startswith("TRTMC_TASK_"):
            task = expand(define.body, defines)
            if task and _TASK_ID.match(task):
                declared.append(_declared(task, rel, define.line, "api", None))
    return declared


def _runtime_tasks(rel: str, text: str, defines: Defines) -> list[DeclaredTask]:
    """Each `kTask` constant, under the interface class holding it, and each interface a macro of the header stamps
    out; a header's own macros are read for that, never added to `defines`."""
    found: list[DeclaredTask] = []
    macros: dict[str, InterfaceMacro] = {}
    constants = _KTaskReader()
    for piece in pieces(text, rel):
        if isinstance(piece, list):
            define = define_of(piece)
            macro = interface_macro(define) if define is not None else None
            if define is not None and macro is not None:
                macros[define.name] = macro
            continue
        hit = constants.feed(piece)
        if hit is not None:
            task = hit[1].content if hit[1].kind == "string" else expand([hit[1]], defines)
            if task and _TASK_ID.match(task):
                found.append(_declared(task, rel, hit[0].line, "runtime", constants.interface))
    for stamp in macro_uses(text, rel, macros) if macros else ():
        task = expand(stamp.value, defines)
        if task and _TASK_ID.match(task):
            found.append(_declared(task, rel, stamp.value[0].line, "runtime", stamp.interface))
    return sorted(found, key=lambda d: d.line)


class _KTaskReader:
    """Reads code tokens one at a time, keeping the last five: the interface class a line opens (`class
    IVideoTextToText`, not a forward declaration `class IVideoTextToText;`), and the first `kTask` constant of a
    line given a string or a `TRTMC_TASK_*` define (`kTask = "id"`, `kTasks[] = {...}`), all on one line."""

    def __init__(self) -> None:
        self.interface: str | None = None
        self._window: deque[Token] = deque(maxlen=5)
        self._done_line = 0

    def feed(self, token: Token) -> tuple[Token, Token] | None:
        """The kTask token and its value when `token` completes a constant, else None."""
        window = self._window
        window.append(token)
        if len(window) >= 3:
            keyword, name = window[-3], window[-2]
            if keyword.line_start and keyword.text in ("class", "struct") and name.line == keyword.line:
                declaration_only = token.text == ";" and token.line == name.line
                if name.kind == "word" and _INTERFACE.fullmatch(name.text) and not declaration_only:
                    self.interface = name.text
        for size in (3, 5):
            shape = list(window)[-size:]
            if len(shape) == size and token.line != self._done_line and _ktask_shape(shape):
                self._done_line = token.line
                return shape[0], token
        return None


def _ktask_shape(shape: list[Token]) -> bool:
    """`kTask... = value` or `kTask...[] = value` (= or {), on one line, the value a string or a TRTMC_TASK_ name."""
    first, value = shape[0], shape[-1]
    if not (first.kind == "word" and first.text.startswith("kTask")) or value.line != first.line:
        return False
    if [token.text for token in shape[1:-1]] not in (["="], ["{"], ["[", "]", "="], ["[", "]", "{"]):
        return False
    if value.kind == "string":
        return bool(value.content)
    return value.kind == "word" and value.text.startswith("TRTMC_TASK_") and len(value.text) > len("TRTMC_TASK_")


def _declared(task: str, rel: str, line: int, side: str, interface: str | None) -> DeclaredTask:
    known = task in TASKS
    return DeclaredTask(task, rel, line, side, interface, known, TASKS[task] if known else infer_contract(task))


def interface_map(declared: TaskDeclarations) -> dict[str, str]:
    """Runtime interface name to Task id: the headers' own kTask classes, else TRTMC's naming of a known id."""
    ids = set(TASKS) | set(declared.ids())
    return {interface_name(task): task for task in sorted(ids)} | declared.interface_tasks()
