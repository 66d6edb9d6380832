"""GitLab's CI expression language (`rules: if`, `only/except: variables`): `$VAR`, string
literals, `null`, `/regex/flags`, `==`, `!=`, `=~`, `!~`, `&&` (binds tighter), `||` and
parentheses. Values are strings or None; an expression is true when its value is a
non-empty string (or a match)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kiln.services.ci_yaml.untrusted import UnsupportedPattern, UntrustedPattern

MAX_LENGTH = 10_000
MAX_TOKENS = 500


class ExpressionError(Exception):
    """Not an expression GitLab's lexer and parser accept."""


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # var, str, null, pattern, op, lparen, rparen
    value: Any


_TOKEN = re.compile(
    r"""\s*(?:
      (?P<var>\$(?:\{(?P<bname>\w+)\}|(?P<name>\w+)))
    | "(?P<dq>[^"]*)"
    | '(?P<sq>[^']*)'
    | (?P<pattern>/(?:\\.|[^/\\])*/[a-z]*)
    | (?P<null>null\b)
    | (?P<op>==|!=|=~|!~|&&|\|\|)
    | (?P<lparen>\()
    | (?P<rparen>\))
    )""",
    re.VERBOSE,
)

_FLAGS = {"i": re.IGNORECASE, "m": re.DOTALL, "x": re.VERBOSE, "s": re.DOTALL}


def _tokens(text: str) -> list[_Tok]:
    if len(text) > MAX_LENGTH:
        raise ExpressionError("too long")
    out: list[_Tok] = []
    pos, end = 0, len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ExpressionError("invalid token")
        pos = m.end()
        if m.group("var"):
            out.append(_Tok("var", m.group("bname") or m.group("name")))
        elif m.group("dq") is not None:
            out.append(_Tok("str", m.group("dq")))
        elif m.group("sq") is not None:
            out.append(_Tok("str", m.group("sq")))
        elif m.group("pattern"):
            out.append(_Tok("pattern", compile_pattern(m.group("pattern"))))
        elif m.group("null"):
            out.append(_Tok("null", None))
        elif m.group("op"):
            out.append(_Tok("op", m.group("op")))
        elif m.group("lparen"):
            out.append(_Tok("lparen", "("))
        else:
            out.append(_Tok("rparen", ")"))
        if len(out) > MAX_TOKENS:
            raise ExpressionError("too long")
    if not out:
        raise ExpressionError("empty")
    return out


def compile_pattern(text: str) -> UntrustedPattern:
    """`/body/flags` as a regular expression matched in bounded time; raises
    ExpressionError (for lookaround and backreferences too, as GitLab's RE2)."""
    m = re.fullmatch(r"/(.*)/([a-z]*)", text, re.DOTALL)
    if m is None:
        raise ExpressionError("not a pattern")
    flags = 0
    for flag in m.group(2):
        if flag not in _FLAGS:
            raise ExpressionError("unknown flag")
        flags |= _FLAGS[flag]
    try:
        return UntrustedPattern(m.group(1).replace("\\/", "/"), flags)
    except (re.error, UnsupportedPattern, OverflowError, RecursionError) as err:
        raise ExpressionError("invalid pattern") from err


# The tree: ("var", name) ("str", s) ("null",) ("pattern", re) (op, left, right)
Node = tuple[Any, ...]


class _Parser:
    def __init__(self, tokens: list[_Tok]) -> None:
        self.tokens = tokens
        self.i = 0
        self.depth = 0

    def peek(self) -> _Tok | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise ExpressionError("unexpected end")
        self.i += 1
        return tok

    def parse(self) -> Node:
        node = self.or_expr()
        if self.peek() is not None:
            raise ExpressionError("trailing tokens")
        return node

    def or_expr(self) -> Node:
        left = self.and_expr()
        while (tok := self.peek()) is not None and tok.value == "||" and tok.kind == "op":
            self.take()
            left = ("||", left, self.and_expr())
        return left

    def and_expr(self) -> Node:
        left = self.comparison()
        while (tok := self.peek()) is not None and tok.value == "&&" and tok.kind == "op":
            self.take()
            left = ("&&", left, self.comparison())
        return left

    def comparison(self) -> Node:
        left = self.operand()
        tok = self.peek()
        if tok is not None and tok.kind == "op" and tok.value in ("==", "!=", "=~", "!~"):
            self.take()
            return (tok.value, left, self.operand())
        return left

    def operand(self) -> Node:
        tok = self.take()
        if tok.kind == "lparen":
            self.depth += 1
            if self.depth > 50:
                raise ExpressionError("too deep")
            node = self.or_expr()
            if self.take().kind != "rparen":
                raise ExpressionError("unbalanced")
            self.depth -= 1
            return node
        if tok.kind == "var":
            return ("var", tok.value)
        if tok.kind == "str":
            return ("str", tok.value)
        if tok.kind == "null":
            return ("null",)
        if tok.kind == "pattern":
            return ("pattern", tok.value)
        raise ExpressionError("unexpected token")


def parse(text: str) -> Node:
    """The expression's tree; raises ExpressionError (GitLab: "invalid expression syntax")."""
    return _Parser(_tokens(text)).parse()


def valid(text: Any) -> bool:
    if not isinstance(text, str):
        return False
    try:
        parse(text)
    except ExpressionError:
        return False
    return True


def _value(node: Node, variables: Mapping[str, str]) -> Any:
    kind = node[0]
    if kind == "var":
        return variables.get(node[1])
    if kind == "str":
        return node[1]
    if kind == "null":
        return None
    if kind == "pattern":
        return node[1]
    left = _value(node[1], variables)
    if kind == "&&":
        return _value(node[2], variables) if _truthy(left) else left
    if kind == "||":
        return left if _truthy(left) else _value(node[2], variables)
    right = _value(node[2], variables)
    if kind in ("==", "!="):
        equal = _plain(left) == _plain(right)
        return equal if kind == "==" else not equal
    matched = _matches(left, right)
    return matched if kind == "=~" else not matched


def _plain(value: Any) -> Any:
    return value.pattern if isinstance(value, UntrustedPattern) else value


def _matches(left: Any, right: Any) -> bool:
    if isinstance(right, str):
        try:
            right = compile_pattern(right)
        except ExpressionError:
            return False
    if not isinstance(right, UntrustedPattern) or not isinstance(left, str):
        return False
    return right.found_in(left)


def _truthy(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value != ""
    return value is not None


def evaluate(text: str, variables: Mapping[str, str]) -> bool:
    """Whether the expression holds; raises ExpressionError for bad syntax."""
    return _truthy(_value(parse(text), variables))
