"""Hostile configurations end in GitLab's errors quickly: never an exception, never a hang."""

from __future__ import annotations

import time

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kiln.services.ci_yaml import Context, plan_pipeline

TOO_BIG = "The parsed YAML is too big"

LAUGHS = "\n".join(
    [
        "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]",
        *(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]" for i in range(8)),
        "j: {script: *i}",
    ]
)


def timed(text: str, ctx: Context | None = None) -> list[str]:
    started = time.monotonic()
    plan = plan_pipeline(text, ctx or Context(ref="main"))
    assert time.monotonic() - started < 5
    assert plan.jobs == []
    return plan.errors


def test_billion_laughs_aliases_are_an_error():
    assert timed(LAUGHS) == [TOO_BIG]


def test_merge_key_bombs_are_an_error():
    lines = ["a0: &a0 {k: v}"]
    lines += [f"a{i}: &a{i} {{<<: [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]}}" for i in range(1, 20)]
    assert timed("\n".join(lines) + "\nj: {script: x}\n") == [TOO_BIG]


def test_reference_bombs_are_an_error():
    lines = [".r0: {s: [x, x, x, x, x, x, x, x]}"]
    lines += [f".r{i}: {{s: [{', '.join([f'!reference [.r{i - 1}, s]'] * 8)}]}}" for i in range(1, 9)]
    errors = timed("\n".join(lines) + "\nj: {script: !reference [.r8, s]}\n")
    assert errors in ([TOO_BIG], ['!reference [".r8", "s"] is part of a circular chain'])


def test_extends_fanout_is_bounded():
    base = ".base: {script: [x], variables: {" + ", ".join(f"V{i}: v" for i in range(1000)) + "}}\n"
    jobs = "".join(f"j{i}: {{extends: .base}}\n" for i in range(1500))
    assert timed(base + jobs) == [TOO_BIG]


@pytest.mark.parametrize("opening", ["[", "{a: "])
def test_deep_nesting_is_an_error(opening):
    closing = "]" if opening == "[" else "}"
    text = "j: " + opening * 5000 + "x" + closing * 5000 + "\n"
    (error,) = timed(text)
    assert error == TOO_BIG or error.startswith("(<unknown>): exceeded maximum nesting depth")


def test_a_huge_file_is_an_error():
    text = "j: {script: x}\n" + "# padding\n" * 300_000
    assert timed(text) == [TOO_BIG]


def test_circular_includes_are_read_once():
    files = {"a.yml": "include: b.yml\na: {script: x}\n", "b.yml": "include: a.yml\nb: {script: x}\n"}
    plan = plan_pipeline("include: a.yml\n", Context(read_file=files.get))
    assert plan.errors == []
    assert sorted(j.name for j in plan.jobs) == ["a", "b"]


@pytest.mark.parametrize(
    "text",
    [
        "? [a]\n: b\n",
        "j: {script: x, rules: [{if: '$A =~ /(/'}]}\n",
        "j: {script: x, rules: [{if: '" + "(" * 100 + "$A" + ")" * 100 + "'}]}\n",
        "j: {script: x, variables: {A: [1]}}\n",
        "j: {script: x, needs: [{job: 1}]}\n",
        "1: {script: x}\ntrue: {script: y}\n",
        "j: {script: x, cache: {key: {files: 12}}}\n",
        "j: {script: x, artifacts: {paths: 1}}\n",
        "j: {script: x, parallel: {matrix: [{A: {b: c}}]}}\n",
        "j: {script: x, retry: {max: true}}\n",
        "j: {script: x, when: delayed, start_in: [1]}\n",
        "j: {script: x, timeout: true}\n",
        "j: {script: x, image: [a]}\n",
        "j: {script: x, services: [[a]]}\n",
        "j: {script: x, environment: [a]}\n",
        "j: {script: x, only: {refs: 1}}\n",
        "j: {script: x, inherit: {default: 1}}\n",
        "include: [[a]]\nj: {script: x}\n",
        "workflow: {rules: [1]}\nj: {script: x}\n",
        "j: {script: !reference 1}\n",
        "j: {script: !reference [1, 2]}\n",
        "d: 2001-02-30\n",
        "x: !!python/object:os.system {}\n",
        "j: {script: x}\n---\nk: {script: y}\n",
        "\x00",
    ],
)
def test_odd_input_gives_errors_not_exceptions(text):
    plan = plan_pipeline(text, Context(ref="main"))
    assert isinstance(plan.errors, list)


# Values of every shape YAML can give, under every keyword the reader knows.
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=300),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "x", "1h", "manual", "delayed", "/re/", "$A", "a/b", "never", "always", ".h"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["name", "job", "paths", "key", "if", "when", "max", "matrix", "A"]),
            inner,
            max_size=3,
        )
    ),
    max_leaves=8,
)
_keys = st.sampled_from(
    sorted(
        {
            "script",
            "stage",
            "when",
            "start_in",
            "allow_failure",
            "needs",
            "rules",
            "only",
            "except",
            "timeout",
            "retry",
            "artifacts",
            "dependencies",
            "cache",
            "image",
            "services",
            "variables",
            "tags",
            "parallel",
            "environment",
            "trigger",
            "extends",
            "inherit",
            "coverage",
            "hooks",
            "interruptible",
            "resource_group",
            "before_script",
            "after_script",
            "run",
        }
    )
)
_jobs = st.dictionaries(
    st.sampled_from(["a", "b", ".h"]), st.dictionaries(_keys, _values, max_size=5), min_size=1, max_size=3
)
_globals = st.dictionaries(
    st.sampled_from(["stages", "variables", "default", "workflow", "include", "image", "cache"]),
    _values,
    max_size=2,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=_jobs, top=_globals)
def test_any_shape_of_configuration_reads_without_an_exception(jobs, top):
    text = yaml.safe_dump({**top, **jobs})
    plan = plan_pipeline(text, Context(ref="main", read_file=lambda _p: None))
    assert isinstance(plan.errors, list)
    if not plan.errors:
        assert all(isinstance(v["value"], str) for j in plan.jobs for v in j.variables)
