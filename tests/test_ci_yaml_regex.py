"""Patterns a configuration writes (`=~`, `!~`, `only: refs: /…/`) match as GitLab's RE2
does: in time linear in the text, whatever the pattern; backreferences and lookaround are
not patterns."""

from __future__ import annotations

import random
import re
import time
from re import _parser as sre_parse

import pytest

from kiln.services.ci_yaml import Context, plan_pipeline
from kiln.services.ci_yaml.expressions import ExpressionError, compile_pattern, evaluate
from kiln.services.ci_yaml.untrusted import UnsupportedPattern, UntrustedPattern, _compile, _search


def jobs_of(text: str, **variables: str) -> list[str]:
    plan = plan_pipeline(text, Context(ref="main", variables={"CI_COMMIT_BRANCH": "main", **variables}))
    assert plan.errors == []
    return [j.name for j in plan.jobs]


@pytest.mark.parametrize(
    "pattern",
    [r"(a+)+$", r"(a|aa)+$", r"(a*)*b", r"(\w+\s?)*x", r".*a.*a.*a.*a.*a.*a.*b", r"(a|a)*c"],
)
def test_runaway_patterns_end_quickly(pattern):
    config = f"j:\n  script: x\n  rules:\n    - if: $LONG =~ /{pattern}/\n"
    started = time.monotonic()
    assert jobs_of(config, LONG="a" * 10_000 + "!") == []
    assert time.monotonic() - started < 3


def test_only_refs_patterns_end_quickly():
    config = "j:\n  script: x\n  only: ['/^(a+)+$/']\n"
    started = time.monotonic()
    plan = plan_pipeline(config, Context(ref="a" * 5_000 + "!", variables={}))
    assert plan.jobs == []
    assert time.monotonic() - started < 3


def test_patterns_still_match_as_before():
    assert evaluate("$CI_COMMIT_TAG =~ /^v\\d+\\.\\d+\\.\\d+$/", {"CI_COMMIT_TAG": "v1.22.3"})
    assert not evaluate("$CI_COMMIT_TAG =~ /^v\\d+\\.\\d+\\.\\d+$/", {"CI_COMMIT_TAG": "v1.22"})
    assert evaluate("$BRANCH =~ /^FEATURE\\/.+-.+/i", {"BRANCH": "feature/a-b"})
    assert evaluate("$BRANCH !~ /^(release|hotfix)\\/.*x.*$/", {"BRANCH": "main"})


@pytest.mark.parametrize("body", [r"(a)\1", r"a(?=b)", r"a(?!b)", r"(?<=a)b", r"(?<!a)b"])
def test_backreferences_and_lookaround_are_not_patterns(body):
    with pytest.raises(ExpressionError):
        compile_pattern(f"/{body}/")
    with pytest.raises(UnsupportedPattern):
        UntrustedPattern(body)


def test_a_pattern_too_large_to_match_safely_is_refused():
    with pytest.raises(ExpressionError):
        compile_pattern("/(x{1,100}){1,100}/")


def test_the_automaton_agrees_with_re_on_what_both_accept():
    """Random patterns of every construct the automaton handles, against random texts."""
    atoms = ["a", "b", ".", "[ab]", "[^a]", r"\d", r"\w", r"\W", r"\s", "(?:a|bc)", "(a|)", "[A-C]", r"\n"]
    anchors = ["^", "$", r"\b", r"\A", r"\Z"]
    quantifiers = ["", "", "*", "+", "?", "{2}", "{1,3}", "*?", "+?"]
    rnd = random.Random(14)

    def pattern(depth: int = 0) -> str:
        out = ""
        for _ in range(rnd.randint(1, 4)):
            if rnd.random() < 0.15:
                out += rnd.choice(anchors)
                continue
            if depth < 2 and rnd.random() < 0.25:
                atom = f"({pattern(depth + 1)}|{pattern(depth + 1)})"
            else:
                atom = rnd.choice(atoms)
            out += atom + rnd.choice(quantifiers)
        return out

    for _ in range(1_000):
        source = pattern()
        flags = rnd.choice([0, re.IGNORECASE, re.MULTILINE, re.DOTALL])
        expected = re.compile(source, flags)
        tree = sre_parse.parse(source, flags)
        program = [*_compile(tree, tree.state.flags), ("match",)]
        for _ in range(4):
            text = "".join(rnd.choice("abcxAB1 \n_") for _ in range(rnd.randint(1, 8)))
            assert _search(program, text) == (expected.search(text) is not None), (source, flags, text)
