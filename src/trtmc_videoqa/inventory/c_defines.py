"""The preprocessor's defines, as the Task registry reads them from headers (tokens, never a preprocessor run).

A header's tokens (c_tokens.py) come as code tokens and whole directives; a `#define` is its name, its parameters
and its body's tokens. `expand` reads the string a define stands for: string literals, another define, or one call
of a function-like macro built of string literals and `#param`; anything else would need a preprocessor and is not
guessed. An interface macro is a function-like macro whose body stamps out a Task interface (`class I##Name { ...
kTask = Id; ... }`); each use of one at the start of a line is read with its arguments. Every piece is read with a
budget: a directive past MAX_DIRECTIVE_TOKENS tokens defines nothing, an argument past MAX_ARGUMENT_TOKENS is no name
or id, and brackets nest within the tokenizer's budget, so the work is linear in the header.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from .c_tokens import Token, tokens

MAX_DIRECTIVE_TOKENS = 4096  # a define longer than this stamps out no Task id the audit reads
MAX_ARGUMENT_TOKENS = 64  # of one argument of an interface macro's use: a name or an id is one to a few
MAX_EXPANSIONS = 8  # a define naming a define naming a define ...


class Stamp(NamedTuple):
    """What one use of an interface macro stamps out: the interface's name and the tokens of its id."""

    interface: str
    value: tuple[Token, ...]


@dataclass(frozen=True)
class Define:
    """A `#define`: its parameters (None for an object-like macro), its body's tokens and its line."""

    name: str
    params: tuple[str, ...] | None
    body: tuple[Token, ...]
    line: int

    @property
    def key(self) -> str:
        """How the defines are looked up: a function-like macro as `NAME()`."""
        return self.name if self.params is None else f"{self.name}()"


Defines = dict[str, Define]


@dataclass(frozen=True)
class InterfaceMacro:
    """A function-like macro whose body stamps out a Task interface: which argument names the class, which the id."""

    name_at: int
    id_at: int
    prefix: str


def pieces(text: str, rel: str) -> Iterator[Token | list[Token]]:
    """Code tokens one by one, and each preprocessor directive whole (tokens past the budget are dropped, and the
    directive's list is then one longer than the budget, so that it reads as no define)."""
    directive: list[Token] | None = None
    for token in tokens(text, rel):
        if token.logical_start:
            if directive is not None:
                yield directive
            directive = [token] if token.text == "#" and token.kind == "punct" else None
            if directive is not None:
                continue
        elif directive is not None:
            if len(directive) <= MAX_DIRECTIVE_TOKENS:
                directive.append(token)
            continue
        yield token
    if directive is not None:
        yield directive


def define_of(directive: list[Token]) -> Define | None:
    """`# define NAME body` or `# define NAME(params) body` (the parenthesis right after the name)."""
    if len(directive) < 3 or len(directive) > MAX_DIRECTIVE_TOKENS or directive[1].text != "define":
        return None
    name = directive[2]
    if name.kind != "word":
        return None
    rest = directive[3:]
    if not rest or rest[0].text != "(" or not name.adjacent(rest[0]):
        return Define(name.text, None, tuple(rest), directive[0].line)
    close = next((index for index, token in enumerate(rest) if token.text == ")"), None)
    if close is None:
        return None
    inside = " ".join(token.text for token in rest[1:close])
    params = tuple(part.strip() for part in inside.split(",")) if inside.strip() else ()
    return Define(name.text, params, tuple(rest[close + 1 :]), directive[0].line)


def expand(body: Sequence[Token], defines: Defines, depth: int = 0) -> str | None:
    """A define's string value: string literals, another define, or one call of a function-like macro built of
    string literals and `#param`. Anything else would need a preprocessor, and is not guessed."""
    if not body:
        return None
    first = body[0]
    if first.text.startswith('"'):
        return "".join(token.content for token in body if token.kind == "string")
    if len(body) == 1 and first.kind == "word" and first.text in defines and depth < MAX_EXPANSIONS:
        return expand(defines[first.text].body, defines, depth + 1)
    shape = [token.kind if token.kind == "word" else token.text for token in body]
    macro = defines.get(f"{first.text}()") if shape == ["word", "(", "word", ")"] else None
    if macro is None or macro.params is None or len(macro.params) != 1:
        return None
    value, items = "", macro.body
    skip = False
    for index, token in enumerate(items):
        if skip:
            skip = False
        elif token.kind == "string":
            value += token.content
        elif token.text == "#" and index + 1 < len(items) and items[index + 1].kind == "word":
            if items[index + 1].text != macro.params[0]:
                return None
            value, skip = value + body[2].text, True
        elif token.kind in ("word", "char", "open"):
            return None
    return value


def interface_macro(define: Define) -> InterfaceMacro | None:
    """A function-like macro whose body holds `class <prefix>##<Param>` and `kTask = <Param>;`, both parameters."""
    if not define.params:
        return None
    body = define.body
    klass = ktask = None
    for index, token in enumerate(body):
        if klass is None and token.text in ("class", "struct"):
            klass = _pasted_name(body[index + 1 : index + 5])
        if ktask is None and token.kind == "word" and token.text.startswith("kTask"):
            rest = [t.text for t in body[index + 1 : index + 4]]
            named = len(rest) == 3 and rest[0] in ("=", "{") and rest[2] in (";", "}")
            ktask = rest[1] if named and body[index + 2].kind == "word" else None
    if klass is None or ktask is None or klass[1] not in define.params or ktask not in define.params:
        return None
    return InterfaceMacro(define.params.index(klass[1]), define.params.index(ktask), klass[0])


def _pasted_name(after: Sequence[Token]) -> tuple[str, str] | None:
    """After `class`: `<prefix> ## <Param>` or `## <Param>`, as (prefix, parameter)."""
    prefix = after[0].text if after and after[0].kind == "word" else ""
    rest = list(after[1:] if prefix else after)
    if len(rest) >= 3 and rest[0].text == rest[1].text == "#" and rest[0].adjacent(rest[1]) and rest[2].kind == "word":
        return prefix, rest[2].text
    return None


@dataclass
class _Call:
    """One use of an interface macro, its arguments read so far (an argument None once it is more than a name or
    an id could be)."""

    macro: InterfaceMacro
    args: list[list[Token] | None] = field(default_factory=lambda: [[]])

    def add(self, token: Token) -> None:
        current = self.args[-1]
        if current is not None and len(current) < MAX_ARGUMENT_TOKENS:
            current.append(token)
        elif current is not None:
            self.args[-1] = None

    def spoil(self) -> None:
        self.args[-1] = None

    def next_argument(self) -> None:
        """A comma: the next argument, up to the last one the macro reads (the rest are one None)."""
        if len(self.args) <= max(self.macro.name_at, self.macro.id_at):
            self.args.append([])
        elif self.args[-1] is not None:
            self.args.append(None)

    def stamp(self) -> Stamp | None:
        """The interface's name and the id's tokens, once the use is closed, when its name is one word."""
        macro = self.macro
        if max(macro.name_at, macro.id_at) >= len(self.args):
            return None
        name, value = self.args[macro.name_at], self.args[macro.id_at]
        if name is None or value is None or len(name) != 1 or name[0].kind != "word" or not value:
            return None
        return Stamp(f"{macro.prefix}{name[0].text}", tuple(value))


def macro_uses(text: str, rel: str, macros: dict[str, InterfaceMacro]) -> Iterator[Stamp]:
    """Each use of such a macro at the start of a line (its arguments possibly over several lines) that names one
    interface and gives an id. Brackets inside a use nest; a `]` or `}` that closes nothing it opened is part of an
    argument; a use left open at the end of the file stamps nothing."""
    stack: list[_Call | None] = []  # the brackets open inside a use: a use's own parenthesis is its _Call
    calls: list[_Call] = []
    waiting: tuple[Token, InterfaceMacro] | None = None  # a macro's name opening a line, before its "("
    for token in code_tokens(text, rel):
        if waiting is not None and token.text == "(" and token.line == waiting[0].line:
            if calls:
                calls[-1].spoil()
            call = _Call(waiting[1])
            stack.append(call)
            calls.append(call)
            waiting = None
            continue
        waiting = (token, macros[token.text]) if token.line_start and token.text in macros else None
        if not calls:
            continue
        top = stack[-1]
        if token.text == "," and top is not None:
            top.next_argument()
        elif token.text == ")" and top is not None:
            stack.pop()
            calls.pop()
            stamp = top.stamp()
            if stamp is not None:
                yield stamp
        elif token.text in ("(", "[", "{"):
            calls[-1].add(token)
            stack.append(None)
        elif token.text in (")", "]", "}") and top is None:
            calls[-1].add(token)
            stack.pop()
        else:
            calls[-1].add(token)


def code_tokens(text: str, rel: str) -> Iterator[Token]:
    """The code tokens of a header, its directives left out."""
    return (piece for piece in pieces(text, rel) if not isinstance(piece, list))
