"""Regular expressions written by whoever pushes a configuration (`=~` in `rules: if`,
`/regex/` in `only: refs`), matched without letting them run away.

GitLab matches these with RE2, whose time is linear in the text. Python's `re` backtracks: a
pattern such as `(a+)+$` against a long variable takes exponential time and cannot be
interrupted. So a pattern with at most one repetition (whose cost is at most quadratic) is
matched by `re`; any other is matched by a small automaton over the text (Thompson's
construction, simulated state set by state set), linear in the text. Backreferences and
lookaround, which RE2 does not have, are refused, as GitLab refuses them."""

from __future__ import annotations

import re
from collections.abc import Callable
from re import _constants as sre
from re import _parser as sre_parse
from typing import Any

# Instructions of the automaton at most (a repetition count is expanded into copies).
MAX_PROGRAM = 1_000

Predicate = Callable[[str], bool]
# ("char", predicate) | ("split", offset, offset) | ("jmp", offset) | ("at", code, multiline)
# | ("match",); offsets are relative to the instruction.
Instruction = tuple[Any, ...]


class UnsupportedPattern(ValueError):
    """A pattern RE2 would not take, or too large to match safely."""


class UntrustedPattern:
    """A compiled pattern; `pattern` is its source, as `re.Pattern.pattern`."""

    __slots__ = ("_program", "_re", "pattern")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._re = re.compile(source, flags)  # re.error for a pattern that does not compile
        self.pattern = source
        tree = sre_parse.parse(source, flags)
        self._program: list[Instruction] | None = None
        if _repetitions(tree) > 1:
            program = [*_compile(tree, tree.state.flags), ("match",)]
            if len(program) > MAX_PROGRAM:
                raise UnsupportedPattern("pattern too large")
            self._program = program

    def found_in(self, text: str) -> bool:
        """Whether the pattern matches anywhere in `text` (`re.search`)."""
        if self._program is None:
            return self._re.search(text) is not None
        return _search(self._program, text)


# ----------------------------------------------------------------------------- reading the tree


def _repetitions(items: Any) -> int:
    """How many repetitions of more than one time the tree holds, nested ones counted, an
    alternation inside a repetition counted once more; refuses what RE2 lacks."""
    count = 0
    for op, av in items:
        if op in (sre.GROUPREF, sre.GROUPREF_EXISTS, sre.ASSERT, sre.ASSERT_NOT):
            raise UnsupportedPattern("backreferences and lookaround are not supported")
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            _low, high, body = av
            inner = _repetitions(body)
            branches = _has_branch(body)
            count += (1 if high > 1 else 0) + inner + (1 if branches else 0)
        elif op == sre.SUBPATTERN:
            count += _repetitions(av[3])
        elif op == sre.ATOMIC_GROUP:
            count += _repetitions(av)
        elif op == sre.BRANCH:
            count += sum(_repetitions(alt) for alt in av[1])
        if count > 1:
            return count
    return count


def _has_branch(items: Any) -> bool:
    """Whether an alternation stands anywhere in the tree (inside groups too)."""
    for op, av in items:
        if op == sre.BRANCH:
            return True
        if op == sre.SUBPATTERN and _has_branch(av[3]):
            return True
        if op == sre.ATOMIC_GROUP and _has_branch(av):
            return True
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT) and _has_branch(av[2]):
            return True
    return False


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


_CATEGORIES: dict[Any, Predicate] = {
    sre.CATEGORY_DIGIT: str.isdecimal,
    sre.CATEGORY_NOT_DIGIT: lambda ch: not ch.isdecimal(),
    sre.CATEGORY_SPACE: str.isspace,
    sre.CATEGORY_NOT_SPACE: lambda ch: not ch.isspace(),
    sre.CATEGORY_WORD: _is_word,
    sre.CATEGORY_NOT_WORD: lambda ch: not _is_word(ch),
}


def _folded(pred: Predicate, ignore_case: bool) -> Predicate:
    if not ignore_case:
        return pred
    return lambda ch: pred(ch) or pred(ch.lower()) or pred(ch.upper())


def _char_set(items: Any, ignore_case: bool) -> Predicate:
    negate = False
    singles: set[str] = set()
    ranges: list[tuple[int, int]] = []
    categories: list[Predicate] = []
    for op, av in items:
        if op == sre.NEGATE:
            negate = True
        elif op == sre.LITERAL:
            singles.add(chr(av))
        elif op == sre.RANGE:
            ranges.append(av)
        elif op == sre.CATEGORY:
            categories.append(_CATEGORIES[av])
        else:
            raise UnsupportedPattern(f"unsupported class item {op}")

    def member(ch: str) -> bool:
        code = ord(ch)
        return (
            ch in singles
            or any(lo <= code <= hi for lo, hi in ranges)
            or any(category(ch) for category in categories)
        )

    inside = _folded(member, ignore_case)
    return (lambda ch: not inside(ch)) if negate else inside


def _star(body: list[Instruction]) -> list[Instruction]:
    return [("split", 1, len(body) + 2), *body, ("jmp", -(len(body) + 1))]


def _optional(body: list[Instruction]) -> list[Instruction]:
    return [("split", 1, len(body) + 1), *body]


def _either(first: list[Instruction], second: list[Instruction]) -> list[Instruction]:
    return [("split", 1, len(first) + 2), *first, ("jmp", len(second) + 1), *second]


def _compile(items: Any, flags: int) -> list[Instruction]:
    ignore_case = bool(flags & re.IGNORECASE)
    out: list[Instruction] = []
    for op, av in items:
        if len(out) > MAX_PROGRAM:
            raise UnsupportedPattern("pattern too large")
        if op == sre.LITERAL:
            out.append(("char", _folded(chr(av).__eq__, ignore_case)))
        elif op == sre.NOT_LITERAL:
            same = _folded(chr(av).__eq__, ignore_case)
            out.append(("char", lambda ch, same=same: not same(ch)))
        elif op == sre.ANY:
            out.append(("char", (lambda ch: True) if flags & re.DOTALL else (lambda ch: ch != "\n")))
        elif op == sre.IN:
            out.append(("char", _char_set(av, ignore_case)))
        elif op == sre.AT:
            out.append(("at", av, bool(flags & re.MULTILINE)))
        elif op == sre.SUBPATTERN:
            _group, add, remove, body = av
            out += _compile(body, (flags | add) & ~remove)
        elif op == sre.ATOMIC_GROUP:
            out += _compile(av, flags)
        elif op == sre.BRANCH:
            alternatives = [_compile(alt, flags) for alt in av[1]]
            code = alternatives[-1]
            for alt in reversed(alternatives[:-1]):
                code = _either(alt, code)
            out += code
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, high, body = av
            once = _compile(body, flags)
            if (low + (0 if high == sre.MAXREPEAT else high - low)) * (len(once) + 2) > MAX_PROGRAM:
                raise UnsupportedPattern("pattern too large")
            out += once * low
            if high == sre.MAXREPEAT:
                out += _star(once)
            else:
                for _ in range(high - low):
                    out += _optional(once)
        else:
            raise UnsupportedPattern(f"unsupported pattern element {op}")
    return out


# ----------------------------------------------------------------------------- matching


def _holds(code: Any, multiline: bool, text: str, pos: int) -> bool:
    n = len(text)
    if code in (sre.AT_BEGINNING, sre.AT_BEGINNING_LINE):
        return pos == 0 or (multiline and text[pos - 1] == "\n")
    if code == sre.AT_BEGINNING_STRING:
        return pos == 0
    if code in (sre.AT_END, sre.AT_END_LINE):
        return pos == n or (pos == n - 1 and text[pos] == "\n") or (multiline and text[pos] == "\n")
    if code == sre.AT_END_STRING:
        return pos == n
    before = pos > 0 and _is_word(text[pos - 1])
    after = pos < n and _is_word(text[pos])
    if code in (sre.AT_BOUNDARY, sre.AT_UNI_BOUNDARY):
        return before != after
    if code in (sre.AT_NON_BOUNDARY, sre.AT_UNI_NON_BOUNDARY):
        return before == after
    return False


def _search(program: list[Instruction], text: str) -> bool:
    """Whether the program matches anywhere in `text`: every thread advances one character at
    a time together, so the work is the text's length times the program's at most."""
    current: list[int] = []
    seen: set[int] = set()

    def add(threads: list[int], start: int, pos: int) -> bool:
        """Adds the threads reachable from `start` without reading; True on a match."""
        stack = [start]
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            ins = program[pc]
            kind = ins[0]
            if kind == "match":
                return True
            if kind == "char":
                threads.append(pc)
            elif kind == "jmp":
                stack.append(pc + ins[1])
            elif kind == "split":
                stack.append(pc + ins[2])
                stack.append(pc + ins[1])
            elif _holds(ins[1], ins[2], text, pos):
                stack.append(pc + 1)
        return False

    for pos in range(len(text) + 1):
        if add(current, 0, pos):
            return True
        if pos == len(text):
            return False
        ch = text[pos]
        following: list[int] = []
        seen = set()
        for pc in current:
            if program[pc][1](ch) and add(following, pc + 1, pos + 1):
                return True
        current = following
    return False
