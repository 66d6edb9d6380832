"""Reading a `.gitlab-ci.yml` into a pipeline plan, keyword by keyword, as GitLab documents
each one; bad configurations give GitLab's errors in `plan.errors`, never an exception."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from kiln.services.ci_yaml import Context, Need, PipelinePlan, plan_pipeline


def read(text: str, ctx: Context | None = None, **kw: Any) -> PipelinePlan:
    return plan_pipeline(textwrap.dedent(text), ctx or Context(ref="main"), **kw)


def ok(text: str, ctx: Context | None = None, **kw: Any) -> PipelinePlan:
    plan = read(text, ctx, **kw)
    assert plan.errors == []
    return plan


def job(plan: PipelinePlan, name: str) -> Any:
    return next(j for j in plan.jobs if j.name == name)


def names(plan: PipelinePlan) -> list[str]:
    return [j.name for j in plan.jobs]


def errors(text: str, ctx: Context | None = None) -> list[str]:
    plan = read(text, ctx)
    assert plan.jobs == []
    return plan.errors


DONE_WHEN = """
stages: [build, test, deploy]
build:
  stage: build
  script: make
  artifacts:
    paths: [out/]
test:
  stage: test
  needs: [build]
  script: make test
flaky:
  stage: test
  script: exit 1
  allow_failure: true
deploy:
  stage: deploy
  needs: [{job: build, artifacts: true}, test]
  script: ./deploy out/
  when: manual
"""


def test_the_issue_pipeline_reads_into_three_stages_with_needs_and_artifacts():
    plan = ok(DONE_WHEN)
    assert plan.stages == ["build", "test", "deploy"]
    assert [(j.name, j.stage, j.stage_idx) for j in plan.jobs] == [
        ("build", "build", 0),
        ("test", "test", 1),
        ("flaky", "test", 1),
        ("deploy", "deploy", 2),
    ]
    assert job(plan, "build").needs is None
    assert job(plan, "build").options["artifacts"] == [
        {
            "name": None,
            "untracked": False,
            "paths": ["out/"],
            "when": "on_success",
            "expire_in": None,
            "artifact_type": "archive",
            "artifact_format": "zip",
        }
    ]
    assert job(plan, "test").needs == [Need("build")]
    assert (job(plan, "flaky").allow_failure, job(plan, "flaky").when) == (True, "on_success")
    deploy = job(plan, "deploy")
    assert (deploy.when, deploy.allow_failure) == ("manual", True)
    assert deploy.needs == [Need("build", artifacts=True), Need("test")]
    assert deploy.options["script"] == ["./deploy out/"]


# ------------------------------------------------------------------------------- stages


def test_stages_default_to_build_test_deploy_and_jobs_to_test():
    plan = ok("a: {script: x}\nb: {stage: build, script: y}\n")
    assert plan.stages == ["build", "test"]
    assert [(j.name, j.stage_idx) for j in plan.jobs] == [("b", 0), ("a", 1)]


def test_pre_and_post_are_always_first_and_last():
    plan = ok(
        "stages: [one]\nz: {stage: .post, script: x}\na: {stage: one, script: x}\np: {stage: .pre, script: x}\n"
    )
    assert plan.stages == [".pre", "one", ".post"]
    assert names(plan) == ["p", "a", "z"]


def test_stages_without_jobs_are_dropped_and_indexes_count_used_ones():
    plan = ok("stages: [a, b, c]\nx: {stage: c, script: s}\n")
    assert plan.stages == ["c"]
    assert plan.jobs[0].stage_idx == 0


def test_an_undefined_stage_is_an_error():
    assert errors("stages: [build]\nx: {stage: nope, script: s}\n") == [
        "x job: chosen stage nope does not exist; available stages are .pre, build, .post"
    ]


# ------------------------------------------------------------------------------ scripts


@pytest.mark.parametrize(
    ("script", "lines"),
    [("echo 1", ["echo 1"]), (["a", "b"], ["a", "b"]), (["a", ["b", ["c"]]], ["a", "b", "c"])],
)
def test_scripts_are_strings_or_nested_lists_flattened(script, lines):
    import json

    plan = ok(f"j: {{script: {json.dumps(script)}, before_script: {json.dumps(script)}, after_script: x}}")
    assert plan.jobs[0].options["script"] == lines
    assert plan.jobs[0].options["before_script"] == lines
    assert plan.jobs[0].options["after_script"] == ["x"]


NO_SCRIPT = "config should implement the script:, run:, or trigger: keyword"
NO_VISIBLE_JOB = "jobs config should contain at least one visible job"


@pytest.mark.parametrize("value", ["{stage: test}", "echo", "", "[a]"])
def test_a_job_without_script_is_an_error(value):
    """GitLab names the job after `jobs ` (its humanised name, lower-cased); a configuration
    whose only job is such has no visible job either."""
    assert errors(f"j: {value}\nk: {{script: x}}\n") == [f"jobs j {NO_SCRIPT}"]
    assert errors(f"My_Job: {value}\n") == [f"jobs my_job {NO_SCRIPT}", NO_VISIBLE_JOB]


def test_script_and_trigger_cannot_be_used_together():
    assert "jobs:j config these keys cannot be used together: script, trigger" in errors(
        "j: {script: x, trigger: a/b}\n"
    )


def test_validation_messages_are_lower_case_as_gitlabs():
    assert errors("Build: {script: x, Foo: 1}\n") == ["jobs:build config contains unknown keys: foo"]


def test_a_script_of_numbers_is_an_error():
    assert errors("j: {script: [1]}\n") == [
        "jobs:j:script config should be a string or a nested array of strings up to 10 levels deep"
    ]


def test_unknown_job_keys_are_an_error():
    assert errors("j: {script: x, scrpit: y, foo: 1}\n") == [
        "jobs:j config contains unknown keys: scrpit, foo"
    ]


def test_a_configuration_with_only_hidden_jobs_is_an_error():
    assert errors(".hidden: {script: x}\n") == ["jobs config should contain at least one visible job"]


# ---------------------------------------------------------------------------- variables


def test_variables_are_strings_global_first_then_the_jobs():
    plan = ok(
        """
        variables:
          A: 1
          B: "two"
          C: 1.5
          G: {value: g, description: a g, options: [g, h]}
        j:
          script: x
          variables:
            B: own
            D: {value: "$A", expand: false}
            E: {value: e, expand: true}
        """
    )
    assert plan.jobs[0].variables == [
        {"key": "A", "value": "1"},
        {"key": "B", "value": "own"},
        {"key": "C", "value": "1.5"},
        {"key": "G", "value": "g"},
        {"key": "D", "value": "$A", "raw": True},
        {"key": "E", "value": "e", "raw": False},
    ]


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ("{A: true}", "variable definition must be either a string or a hash"),
        ("[A]", "jobs:j:variables config should be a hash"),
        ("{A: {value: a, description: d}}", "jobs:j:variables:a config uses invalid data keys: description"),
        ("{A: {value: [a]}}", "jobs:j:variables:a config value must be an alphanumeric string"),
    ],
)
def test_variable_errors(variables, message):
    assert errors(f"j: {{script: x, variables: {variables}}}\n") == [message]


def test_a_global_variable_outside_its_options_is_an_error():
    assert errors("variables: {V: {value: x, options: [a, b]}}\nj: {script: x}\n") == [
        "variables:v config value must be present in options"
    ]


@pytest.mark.parametrize(
    ("inherit", "expected"),
    [("false", []), ("[A]", ["A"]), ("true", ["A", "B"])],
)
def test_inherit_variables_picks_global_variables(inherit, expected):
    plan = ok(f"variables: {{A: a, B: b}}\nj: {{script: x, inherit: {{variables: {inherit}}}}}\n")
    assert [v["key"] for v in plan.jobs[0].variables] == expected


def test_inherit_default_picks_default_keywords():
    plan = ok(
        "default: {image: ruby, tags: [t]}\nj: {script: x, inherit: {default: [tags]}}\nk: {script: y}\n"
    )
    assert "image" not in job(plan, "j").options
    assert job(plan, "j").tags == ["t"]
    assert job(plan, "k").options["image"] == {"name": "ruby"}


# ------------------------------------------------------------------------------ default


def test_default_keywords_apply_unless_the_job_sets_them():
    plan = ok(
        """
        default:
          image: ruby:3
          services: [postgres]
          before_script: [setup]
          after_script: [cleanup]
          tags: [docker]
          retry: 1
          timeout: 1h
          interruptible: true
          cache: {paths: [vendor/]}
          artifacts: {paths: [log/]}
        a: {script: x}
        b: {script: y, image: alpine, tags: [], before_script: []}
        """
    )
    a = job(plan, "a")
    assert a.options["image"] == {"name": "ruby:3"}
    assert a.options["services"] == [{"name": "postgres"}]
    assert (a.options["before_script"], a.options["after_script"]) == (["setup"], ["cleanup"])
    assert a.tags == ["docker"]
    assert a.options["retry"] == {"max": 1, "when": ["always"]}
    assert a.options["timeout"] == 3600
    assert a.options["interruptible"] is True
    assert a.options["cache"][0]["paths"] == ["vendor/"]
    assert a.options["artifacts"][0]["paths"] == ["log/"]
    b = job(plan, "b")
    assert b.options["image"] == {"name": "alpine"}
    assert b.tags == []
    assert b.options["before_script"] == []


def test_global_image_and_before_script_are_defaults_too():
    plan = ok("image: ruby\nbefore_script: [a]\nj: {script: x}\n")
    assert plan.jobs[0].options["image"] == {"name": "ruby"}
    assert plan.jobs[0].options["before_script"] == ["a"]


# ---------------------------------------------------------------------------- when


@pytest.mark.parametrize("when", ["on_success", "on_failure", "always", "manual"])
def test_when_values(when):
    assert ok(f"j: {{script: x, when: {when}}}\n").jobs[0].when == when


def test_a_manual_job_may_fail_unless_it_says_otherwise():
    plan = ok("a: {script: x, when: manual}\nb: {script: x, when: manual, allow_failure: false}\n")
    assert (job(plan, "a").allow_failure, job(plan, "b").allow_failure) == (True, False)


@pytest.mark.parametrize(("start_in", "seconds"), [("30 minutes", 1800), ("1h 30m", 5400), ("1 day", 86400)])
def test_delayed_jobs_start_in_seconds(start_in, seconds):
    plan = ok(f"j: {{script: x, when: delayed, start_in: {start_in}}}\n")
    assert (plan.jobs[0].when, plan.jobs[0].start_in) == ("delayed", seconds)


def test_when_errors():
    assert errors("j: {script: x, when: sometimes}\n") == [
        "jobs:j when should be one of: on_success, on_failure, always, manual, delayed"
    ]
    assert errors("j: {script: x, when: delayed}\n") == ["jobs:j start in should be a duration"]
    assert errors("j: {script: x, when: delayed, start_in: 2 weeks}\n") == [
        "jobs:j start in should not exceed the limit"
    ]


# ------------------------------------------------------------------------ allow_failure


def test_allow_failure_exit_codes():
    plan = ok(
        "j: {script: x, allow_failure: {exit_codes: [137, 255]}}\nk: {script: x, allow_failure: {exit_codes: 1}}\n"
    )
    assert job(plan, "j").allow_failure is False
    assert job(plan, "j").options["allow_failure_exit_codes"] == [137, 255]
    assert job(plan, "k").options["allow_failure_exit_codes"] == [1]


def test_allow_failure_of_another_type_is_an_error():
    assert errors("j: {script: x, allow_failure: yes please}\n") == [
        "jobs:j allow failure should be a hash or a boolean value"
    ]


# ---------------------------------------------------------------------------------- needs


def test_needs_empty_list_starts_at_once():
    plan = ok("stages: [a, b]\nx: {stage: a, script: s}\ny: {stage: b, script: s, needs: []}\n")
    assert job(plan, "y").needs == []


def test_needs_hash_form_with_artifacts_and_optional():
    plan = ok(
        "stages: [a, b]\nx: {stage: a, script: s}\n"
        "y: {stage: b, script: s, needs: [{job: x, artifacts: false}, {job: gone, optional: true}]}\n"
    )
    assert job(plan, "y").needs == [Need("x", artifacts=False)]


def test_needs_in_the_same_stage_are_allowed():
    plan = ok("x: {script: s}\ny: {script: s, needs: [x]}\n")
    assert job(plan, "y").needs == [Need("x")]


def test_needs_errors():
    assert errors("y: {script: s, needs: [nope]}\n") == ["y job: undefined need: nope"]
    assert errors("x: {stage: deploy, script: s}\ny: {stage: build, script: s, needs: [x]}\n") == [
        "y job: need x is not defined in current or prior stages"
    ]
    assert errors("x: {script: s, needs: [y]}\ny: {script: s, needs: [x]}\n") == [
        "The pipeline has circular dependencies"
    ]
    assert errors("x: {script: s, needs: [x]}\n") == ["The pipeline has circular dependencies"]


def test_needs_of_a_job_left_out_by_rules_is_an_error_unless_optional():
    text = "x: {script: s, rules: [{if: '$NOPE'}]}\ny: {script: s, needs: [x]}\n"
    assert errors(text)[0].startswith("'y' job needs 'x' job, but 'x' does not exist in the pipeline.")
    plan = ok("x: {script: s, rules: [{if: '$NOPE'}]}\ny: {script: s, needs: [{job: x, optional: true}]}\n")
    assert names(plan) == ["y"]
    assert plan.jobs[0].needs == []


def test_needs_of_a_parallel_job_need_every_instance():
    plan = ok("stages: [a, b]\nx: {stage: a, script: s, parallel: 2}\ny: {stage: b, script: s, needs: [x]}\n")
    assert job(plan, "y").needs == [Need("x 1/2"), Need("x 2/2")]


# ---------------------------------------------------------------------------- dependencies


def test_dependencies_are_kept_and_checked():
    plan = ok(
        "stages: [a, b]\nx: {stage: a, script: s}\ny: {stage: b, script: s, dependencies: [x]}\nz: {stage: b, script: s}\n"
    )
    assert job(plan, "y").options["dependencies"] == ["x"]
    assert job(plan, "z").options["dependencies"] is None
    assert errors("y: {script: s, dependencies: [x]}\n") == ["y job: undefined dependency: x"]
    assert errors("x: {stage: deploy, script: s}\ny: {stage: build, script: s, dependencies: [x]}\n") == [
        "y job: dependency x is not defined in current or prior stages"
    ]


# ----------------------------------------------------------------------------------- rules


def ctx(**variables: str) -> Context:
    return Context(variables=variables, ref=variables.get("CI_COMMIT_REF_NAME", "main"))


@pytest.mark.parametrize(
    ("expression", "variables", "runs"),
    [
        ("$A", {"A": "x"}, True),
        ("$A", {"A": ""}, False),
        ("$A", {}, False),
        ("$A == 'x'", {"A": "x"}, True),
        ('$A == "x"', {"A": "y"}, False),
        ("$A != 'x'", {"A": "y"}, True),
        ("$A == null", {}, True),
        ("$A != null", {"A": ""}, True),
        ("$A =~ /^re/", {"A": "release"}, True),
        ("$A =~ /^RE/i", {"A": "release"}, True),
        ("$A !~ /^re/", {"A": "release"}, False),
        ("$A =~ $P", {"A": "release", "P": "/lea/"}, True),
        ("$A == 'x' && $B == 'y'", {"A": "x", "B": "z"}, False),
        ("$A == 'x' || $B == 'y'", {"A": "q", "B": "y"}, True),
        ("$A == 'x' || $B == 'y' && $C", {"A": "x"}, True),
        ("($A == 'x' || $B == 'y') && $C", {"A": "x"}, False),
        ("${A} == 'x'", {"A": "x"}, True),
        ("'x' == $A", {"A": "x"}, True),
        (
            "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH",
            {"CI_COMMIT_BRANCH": "main", "CI_DEFAULT_BRANCH": "main"},
            True,
        ),
    ],
)
def test_rules_if_expressions(expression, variables, runs):
    import json

    plan = read(
        f"j: {{script: x, rules: [{{if: {json.dumps(expression)}}}]}}\nk: {{script: y}}\n", ctx(**variables)
    )
    assert plan.errors == []
    assert ("j" in names(plan)) is runs


def test_rules_see_yaml_variables():
    plan = ok(
        "variables: {G: 'yes'}\nj: {script: x, variables: {J: a}, rules: [{if: '$G == \"yes\" && $J == \"a\"'}]}\n"
    )
    assert names(plan) == ["j"]


def test_the_first_matching_rule_decides_when_allow_failure_variables_and_needs():
    plan = ok(
        """
        stages: [a, b]
        x: {stage: a, script: s}
        j:
          stage: b
          script: s
          variables: {V: job}
          rules:
            - if: $NOPE
              when: always
            - if: $CI_COMMIT_REF_NAME == "main"
              when: manual
              allow_failure: true
              variables: {V: rule, R: r}
              needs: [x]
            - when: on_success
        """,
        ctx(CI_COMMIT_REF_NAME="main"),
    )
    j = job(plan, "j")
    assert (j.when, j.allow_failure, j.needs) == ("manual", True, [Need("x")])
    assert j.variables == [{"key": "V", "value": "rule"}, {"key": "R", "value": "r"}]


def test_a_manual_rule_does_not_allow_failure_by_itself():
    plan = ok("j: {script: s, rules: [{when: manual}]}\n")
    assert (plan.jobs[0].when, plan.jobs[0].allow_failure) == ("manual", False)


def test_rules_when_never_and_no_match_leave_the_job_out():
    plan = read("a: {script: s, rules: [{when: never}]}\nb: {script: s, rules: [{if: $X}]}\n")
    assert plan.errors == []
    assert plan.jobs == []


def test_rules_delayed_start_in():
    plan = ok("j: {script: s, rules: [{when: delayed, start_in: 5 minutes}]}\n")
    assert (plan.jobs[0].when, plan.jobs[0].start_in) == ("delayed", 300)


@pytest.mark.parametrize(
    ("changes", "changed", "runs"),
    [
        ("[src/*.py]", ["src/a.py"], True),
        ("[src/*.py]", ["src/deep/a.py"], False),
        ("['src/**/*.py']", ["src/deep/a.py"], True),
        ("['**/*.md']", ["README.md"], True),
        ("['{a,b}.txt']", ["b.txt"], True),
        ("{paths: [docs/*], compare_to: main}", ["docs/x"], True),
        ("[docs/*]", ["src/x"], False),
        ("['$DIR/*']", ["lib/x"], True),
    ],
)
def test_rules_changes_match_changed_paths(changes, changed, runs):
    context = Context(variables={"DIR": "lib"}, changed_paths=lambda: changed)
    plan = read(f"j: {{script: x, rules: [{{changes: {changes}}}]}}\nk: {{script: y}}\n", context)
    assert plan.errors == []
    assert ("j" in names(plan)) is runs


def test_rules_changes_hold_when_there_is_nothing_to_compare():
    plan = ok("j: {script: x, rules: [{changes: [nothing/*]}]}\n", Context(changed_paths=None))
    assert names(plan) == ["j"]


def test_rules_exists_asks_the_context():
    asked: list[list[str]] = []

    def exists(globs: list[str]) -> bool:
        asked.append(globs)
        return "Dockerfile" in globs

    plan = read(
        "a: {script: x, rules: [{exists: [Dockerfile]}]}\nb: {script: x, rules: [{exists: {paths: [nope]}}]}\n",
        Context(exists=exists),
    )
    assert names(plan) == ["a"]
    assert asked == [["Dockerfile"], ["nope"]]


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("{if: '$A ==='}", "jobs:j:rules:rule if invalid expression syntax"),
        ("{if: '$A == \"x'}", "jobs:j:rules:rule if invalid expression syntax"),
        ("{when: sometimes}", "jobs:j:rules:rule when unknown value: sometimes"),
        ("{iff: $A}", "jobs:j:rules:rule config contains unknown keys: iff"),
        ("{when: delayed}", "jobs:j:rules:rule start in can't be blank"),
        ("{when: delayed, start_in: soon}", "jobs:j:rules:rule start in should be a duration"),
        ("{when: always, start_in: 1 day}", "jobs:j:rules:rule config contains disallowed keys: start_in"),
    ],
)
def test_rules_errors(rule, message):
    assert message in errors(f"j: {{script: x, rules: [{rule}]}}\n")


def test_rules_with_only_is_an_error():
    assert errors("j: {script: x, rules: [{when: always}], only: [main]}\n") == [
        "jobs:j config key may not be used with `rules`: only"
    ]


# -------------------------------------------------------------------------- only / except


@pytest.mark.parametrize(
    ("only", "context", "runs"),
    [
        ("[main]", Context(ref="main"), True),
        ("[main]", Context(ref="dev"), False),
        ("[branches]", Context(ref="dev"), True),
        ("[branches]", Context(ref="v1", tag=True), False),
        ("[tags]", Context(ref="v1", tag=True), True),
        ("['/^release-.*$/']", Context(ref="release-1"), True),
        ("['/^release-.*$/']", Context(ref="main"), False),
        ("[schedules]", Context(ref="main", source="schedule"), True),
        ("[triggers]", Context(ref="main", source="trigger"), True),
        ("[api]", Context(ref="main", source="api"), True),
        ("[web]", Context(ref="main", source="web"), True),
        ("[pushes]", Context(ref="main", source="push"), True),
        ("[pushes]", Context(ref="main", source="web"), False),
        ("[merge_requests]", Context(ref="main", source="merge_request_event"), True),
        ("[merge_requests]", Context(ref="main"), False),
        ("[main@g/p]", Context(ref="main", variables={"CI_PROJECT_PATH": "g/p"}), True),
        ("[main@g/other]", Context(ref="main", variables={"CI_PROJECT_PATH": "g/p"}), False),
        ("{refs: [main], variables: [$DEPLOY]}", Context(ref="main", variables={"DEPLOY": "1"}), True),
        ("{refs: [main], variables: [$DEPLOY]}", Context(ref="main"), False),
        ("{changes: [a/*]}", Context(ref="main", changed_paths=lambda: ["a/x"]), True),
        ("{changes: [a/*]}", Context(ref="main", changed_paths=lambda: ["b/x"]), False),
    ],
)
def test_only(only, context, runs):
    plan = read(
        f"j: {{script: x, only: {only}}}\nk: {{script: y, only: [branches, tags, schedules, merge_requests, web, api, triggers]}}\n",
        context,
    )
    assert plan.errors == []
    assert ("j" in names(plan)) is runs


@pytest.mark.parametrize(
    ("except_", "context", "runs"),
    [
        ("[main]", Context(ref="main"), False),
        ("[main]", Context(ref="dev"), True),
        ("[tags]", Context(ref="v1", tag=True), False),
        ("{variables: ['$SKIP == \"1\"']}", Context(ref="main", variables={"SKIP": "1"}), False),
        ("{variables: ['$SKIP == \"1\"']}", Context(ref="main"), True),
    ],
)
def test_except(except_, context, runs):
    plan = read(f"j: {{script: x, except: {except_}}}\nk: {{script: y, only: [branches, tags]}}\n", context)
    assert plan.errors == []
    assert ("j" in names(plan)) is runs


def test_jobs_run_for_branches_and_tags_by_default_but_not_merge_requests():
    assert names(read("j: {script: x}\n", Context(ref="v1", tag=True))) == ["j"]
    assert names(read("j: {script: x}\n", Context(ref="main", source="merge_request_event"))) == []


# ------------------------------------------------------------------------ timeout, retry


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("1h 30m", 5400),
        ("90 minutes", 5400),
        ("3600", 3600),
        ("2 hours", 7200),
        ("1 hour and 30 minutes", 5400),
        ("1:30:00", 5400),
        ("2d", 2 * 86400),
        ("1 week", 7 * 86400),
        ("1 month", 30 * 86400),
    ],
)
def test_timeout_human_durations(value, seconds):
    assert ok(f"j: {{script: x, timeout: '{value}'}}\n").jobs[0].options["timeout"] == seconds


def test_timeout_error():
    assert errors("j: {script: x, timeout: soon}\n") == ["jobs:j:timeout config should be a duration"]


def test_retry_forms():
    plan = ok(
        "a: {script: x, retry: 2}\n"
        "b: {script: x, retry: {max: 1, when: [script_failure, api_failure], exit_codes: [137]}}\n"
        "c: {script: x, retry: {max: 2, when: runner_system_failure}}\n"
    )
    assert job(plan, "a").options["retry"] == {"max": 2, "when": ["always"]}
    assert job(plan, "b").options["retry"] == {
        "max": 1,
        "when": ["script_failure", "api_failure"],
        "exit_codes": [137],
    }
    assert job(plan, "c").options["retry"] == {"max": 2, "when": ["runner_system_failure"]}


@pytest.mark.parametrize(
    ("retry", "message"),
    [
        ("3", "jobs:j:retry config must be less than or equal to 2"),
        ("{max: 3}", "jobs:j:retry max config must be less than or equal to 2"),
        ("{max: 1, when: [sometimes]}", "jobs:j:retry when contains unknown values: sometimes"),
        (
            "{max: 1, when: [always, missing_dependency_failure]}",
            "jobs:j:retry when contains unknown values: missing_dependency_failure",
        ),
    ],
)
def test_retry_errors(retry, message):
    assert errors(f"j: {{script: x, retry: {retry}}}\n") == [message]


def test_retry_when_takes_gitlabs_documented_reasons():
    documented = [
        "always",
        "unknown_failure",
        "script_failure",
        "api_failure",
        "stuck_or_timeout_failure",
        "runner_system_failure",
        "runner_unsupported",
        "stale_schedule",
        "job_execution_timeout",
        "archived_failure",
        "unmet_prerequisites",
        "scheduler_failure",
        "data_integrity_failure",
    ]
    plan = ok(f"j: {{script: x, retry: {{max: 2, when: [{', '.join(documented)}]}}}}\n")
    assert job(plan, "j").options["retry"] == {"max": 2, "when": documented}


# ------------------------------------------------------------------------------ artifacts


def test_artifacts_all_keywords_and_reports_as_separate_entries():
    plan = ok(
        """
        j:
          script: x
          artifacts:
            name: bin-$CI_JOB_NAME
            paths: [bin/]
            exclude: [bin/*.o]
            when: always
            expire_in: 1 week
            untracked: true
            expose_as: Binaries
            reports:
              junit: [a.xml, b.xml]
              dotenv: build.env
              coverage_report: {coverage_format: cobertura, path: cov.xml}
        """
    )
    assert plan.jobs[0].options["artifacts"] == [
        {
            "name": "bin-$CI_JOB_NAME",
            "untracked": True,
            "paths": ["bin/"],
            "when": "always",
            "expire_in": "1 week",
            "artifact_type": "archive",
            "artifact_format": "zip",
            "exclude": ["bin/*.o"],
            "expose_as": "Binaries",
        },
        {
            "name": "junit.xml.gz",
            "untracked": False,
            "paths": ["a.xml", "b.xml"],
            "when": "always",
            "expire_in": "1 week",
            "artifact_type": "junit",
            "artifact_format": "gzip",
        },
        {
            "name": ".env.gz",
            "untracked": False,
            "paths": ["build.env"],
            "when": "always",
            "expire_in": "1 week",
            "artifact_type": "dotenv",
            "artifact_format": "gzip",
        },
        {
            "name": "cobertura-coverage.xml.gz",
            "untracked": False,
            "paths": ["cov.xml"],
            "when": "always",
            "expire_in": "1 week",
            "artifact_type": "cobertura",
            "artifact_format": "gzip",
        },
    ]


@pytest.mark.parametrize(
    ("artifacts", "message"),
    [
        ("{paths: [a], whatever: 1}", "jobs:j:artifacts config contains unknown keys: whatever"),
        ("{paths: [a], expire_in: someday}", "jobs:j:artifacts expire in should be a duration"),
        ("{paths: [a], when: sometimes}", "jobs:j:artifacts when should be on_success, on_failure or always"),
        ("{reports: {nope: a}}", "jobs:j:artifacts:reports config contains unknown keys: nope"),
    ],
)
def test_artifacts_errors(artifacts, message):
    assert message in errors(f"j: {{script: x, artifacts: {artifacts}}}\n")


# ---------------------------------------------------------------------------------- cache


def test_cache_forms_in_the_runners_shape():
    files = {"Gemfile.lock": "gems"}
    context = Context(read_file=files.get)
    plan = ok(
        """
        a: {script: x, cache: {key: $CI_COMMIT_REF_SLUG, paths: [vendor/], policy: pull, when: always, untracked: true, fallback_keys: [main]}}
        b: {script: x, cache: [{key: {files: [Gemfile.lock], prefix: gems}, paths: [g/]}, {paths: [n/]}]}
        c: {script: x, cache: {key: {files: [missing.lock]}, paths: [m/]}}
        """,
        context,
    )
    assert job(plan, "a").options["cache"] == [
        {
            "key": "$CI_COMMIT_REF_SLUG",
            "untracked": True,
            "paths": ["vendor/"],
            "policy": "pull",
            "when": "always",
            "fallback_keys": ["main"],
        }
    ]
    b = job(plan, "b").options["cache"]
    assert b[0]["key"].startswith("gems-")
    assert len(b[0]["key"]) == len("gems-") + 40
    assert b[1] == {
        "key": "default",
        "untracked": False,
        "paths": ["n/"],
        "policy": "pull-push",
        "when": "on_success",
        "fallback_keys": [],
    }
    assert job(plan, "c").options["cache"][0]["key"] == "default"


def test_cache_key_with_a_slash_is_an_error():
    assert errors("j: {script: x, cache: {key: a/b}}\n") == [
        'jobs:j:cache:key config cannot contain the "/" character'
    ]


# ------------------------------------------------------------------------ image, services


def test_image_and_services_in_the_runners_shape():
    plan = ok(
        """
        j:
          script: x
          image: {name: "ruby:3", entrypoint: [""], pull_policy: if-not-present}
          services:
            - postgres:15
            - name: redis
              alias: cache
              entrypoint: [redis-server]
              command: ["--port", "6380"]
              variables: {PORT: 6380}
              pull_policy: [always]
        """
    )
    options = plan.jobs[0].options
    assert options["image"] == {"name": "ruby:3", "entrypoint": [""], "pull_policy": ["if-not-present"]}
    assert options["services"] == [
        {"name": "postgres:15"},
        {
            "name": "redis",
            "entrypoint": ["redis-server"],
            "command": ["--port", "6380"],
            "pull_policy": ["always"],
            "alias": "cache",
            "variables": [{"key": "PORT", "value": "6380"}],
        },
    ]


# ------------------------------------------------------------------------------- extends


def test_extends_deep_merges_hashes_and_replaces_the_rest():
    plan = ok(
        """
        .base:
          script: [base]
          variables: {A: base, B: base}
          tags: [one]
        .middle:
          extends: .base
          variables: {B: middle}
          tags: [two]
        j:
          extends: [.middle]
          variables: {C: job}
        """
    )
    j = plan.jobs[0]
    assert j.options["script"] == ["base"]
    assert j.variables == [
        {"key": "A", "value": "base"},
        {"key": "B", "value": "middle"},
        {"key": "C", "value": "job"},
    ]
    assert j.tags == ["two"]


def test_extends_a_list_merges_in_order():
    plan = ok(".a: {script: a, stage: build}\n.b: {script: b}\nj: {extends: [.a, .b]}\n")
    assert (plan.jobs[0].options["script"], plan.jobs[0].stage) == (["b"], "build")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("j: {extends: .nope, script: x}\n", "j: unknown keys in `extends` (.nope)"),
        (
            ".a: {extends: .b}\n.b: {extends: .a}\nj: {extends: .a, script: x}\n",
            "circular dependency detected in `extends`",
        ),
        (".a: [1]\nj: {extends: .a, script: x}\n", "j: invalid base hashes in `extends` (.a)"),
    ],
)
def test_extends_errors(text, message):
    assert any(message in e for e in errors(text))


def test_extends_too_deep_is_an_error():
    chain = (
        "".join(f".l{i}: {{extends: .l{i + 1}}}\n" for i in range(15))
        + ".l15: {script: x}\nj: {extends: .l0}\n"
    )
    assert any("nesting too deep in `extends`" in e for e in errors(chain))


# ---------------------------------------------------------------------- anchors, !reference


def test_anchors_aliases_and_merge_keys():
    plan = ok(
        """
        .defaults: &defaults
          script: [shared]
          tags: [t]
        j:
          <<: *defaults
          tags: [own]
        k: *defaults
        """
    )
    assert (job(plan, "j").options["script"], job(plan, "j").tags) == (["shared"], ["own"])
    assert job(plan, "k").tags == ["t"]


def test_reference_tags_pull_values_from_other_jobs():
    plan = ok(
        """
        .setup:
          script: [one, two]
          vars: {A: a}
        j:
          script:
            - !reference [.setup, script]
            - three
          variables: !reference [.setup, vars]
        """
    )
    assert plan.jobs[0].options["script"] == ["one", "two", "three"]
    assert plan.jobs[0].variables == [{"key": "A", "value": "a"}]


def test_a_missing_reference_is_an_error():
    assert errors("j: {script: !reference [.nope, script]}\n") == [
        '!reference [".nope", "script"] could not be found'
    ]


# ----------------------------------------------------------------------------- include


def test_include_local_merges_files_under_the_root():
    files = {
        "ci/a.yml": "a: {script: a}\nvariables: {FROM: a, KEEP: a}\n",
        "ci/b.yml": "include: ci/c.yml\nb: {script: b}\n",
        "ci/c.yml": "c: {script: c}\n",
    }
    plan = ok(
        "include:\n  - ci/a.yml\n  - local: /ci/b.yml\nvariables: {FROM: root}\nroot: {script: r}\n",
        Context(read_file=files.get),
    )
    assert sorted(names(plan)) == ["a", "b", "c", "root"]
    assert plan.jobs[0].variables == [{"key": "FROM", "value": "root"}, {"key": "KEEP", "value": "a"}]
    assert [i["location"] for i in plan.includes] == ["ci/a.yml", "ci/b.yml", "ci/c.yml"]
    assert "include" not in (plan.merged_yaml or "")
    assert "c:" in (plan.merged_yaml or "")


@pytest.mark.parametrize(
    ("include", "files", "message"),
    [
        ("missing.yml", {}, "Local file `missing.yml` does not exist!"),
        ("a.txt", {"a.txt": "x"}, "Included file `a.txt` does not have YAML extension!"),
        ("bad.yml", {"bad.yml": "a: [1"}, "Included file `bad.yml` does not have valid YAML syntax!"),
        ("empty.yml", {"empty.yml": ""}, "Local file `empty.yml` is empty!"),
        ("{project: g/p, file: x.yml}", {}, "Included file `g/p`: project includes are not supported"),
        (
            "{template: Auto-DevOps.gitlab-ci.yml}",
            {},
            "Included file `Auto-DevOps.gitlab-ci.yml`: template includes are not supported",
        ),
        (
            "'https://example.com/ci.yml'",
            {},
            "Included file `https://example.com/ci.yml`: remote includes are not supported",
        ),
    ],
)
def test_include_errors(include, files, message):
    assert errors(f"include: {include}\nj: {{script: x}}\n", Context(read_file=files.get)) == [message]


def test_too_many_includes_is_an_error():
    files = {f"f{i}.yml": f"include: f{i + 1}.yml\nj{i}: {{script: x}}\n" for i in range(10)}
    plan = read("include: f0.yml\n", Context(read_file=files.get, max_includes=5))
    assert plan.errors == ["Maximum of 5 nested includes are allowed!"]


def test_include_rules_decide_whether_a_file_is_included():
    files = {"a.yml": "a: {script: a}\n", "b.yml": "b: {script: b}\n"}
    text = "include:\n  - {local: a.yml, rules: [{if: $A}]}\n  - {local: b.yml, rules: [{if: $B}]}\nj: {script: x}\n"
    plan = ok(text, Context(variables={"A": "1"}, read_file=files.get))
    assert sorted(names(plan)) == ["a", "j"]


def test_a_configuration_over_max_size_is_an_error():
    assert errors("j: {script: x}\n" + "#" * 100, Context(max_size=50)) == ["The parsed YAML is too big"]


# ----------------------------------------------------------------------------- workflow


def test_workflow_rules_filter_the_pipeline():
    text = "workflow:\n  rules:\n    - if: $CI_COMMIT_TAG\n      when: never\n    - if: $CI_COMMIT_BRANCH\nj: {script: x}\n"
    assert read(text, ctx(CI_COMMIT_TAG="v1")).filtered is True
    assert read(text, ctx()).filtered is True
    plan = read(text, ctx(CI_COMMIT_BRANCH="main"))
    assert (plan.filtered, names(plan)) == (False, ["j"])


def test_workflow_rule_variables_and_name():
    text = (
        "workflow:\n  name: 'Build $KIND on $CI_COMMIT_REF_NAME'\n  rules:\n"
        "    - if: $CI_COMMIT_REF_NAME == 'main'\n      variables: {KIND: release}\n"
        "    - when: always\n"
        "j: {script: x, rules: [{if: $KIND == 'release'}]}\n"
    )
    plan = ok(text, ctx(CI_COMMIT_REF_NAME="main"))
    assert plan.variables == [{"key": "KIND", "value": "release"}]
    assert plan.name == "Build release on main"
    assert names(plan) == ["j"]


# ----------------------------------------------------------------------------- parallel


def test_parallel_number_names_jobs_one_of_n():
    plan = ok("j: {script: x, parallel: 3}\n")
    assert names(plan) == ["j 1/3", "j 2/3", "j 3/3"]
    assert plan.jobs[1].options["parallel"] == {"number": 2, "total": 3}


def test_parallel_matrix_names_jobs_with_their_values():
    plan = ok(
        """
        deploy:
          script: x
          parallel:
            matrix:
              - PROVIDER: aws
                STACK: [monitoring, app1]
              - PROVIDER: gcp
        """
    )
    assert names(plan) == ["deploy: [aws, monitoring]", "deploy: [aws, app1]", "deploy: [gcp]"]
    assert plan.jobs[1].variables == [{"key": "PROVIDER", "value": "aws"}, {"key": "STACK", "value": "app1"}]


@pytest.mark.parametrize("parallel", ["0", "201", "'many'"])
def test_parallel_errors(parallel):
    assert errors(f"j: {{script: x, parallel: {parallel}}}\n")[0].startswith("jobs:j:parallel")


# ------------------------------------------------------------------------- other keywords


def test_environment_resource_group_interruptible_coverage():
    plan = ok(
        """
        a:
          script: x
          environment: {name: production, url: https://example.com}
          resource_group: prod
          interruptible: false
          coverage: '/Total: (\\d+)%/'
        b: {script: x, environment: review/$CI_COMMIT_REF_SLUG}
        c: {script: x, environment: {name: production, action: stop}}
        """
    )
    a = job(plan, "a").options
    assert a["environment"] == {"name": "production", "url": "https://example.com", "action": "start"}
    assert (a["resource_group"], a["interruptible"], a["coverage"]) == ("prod", False, "Total: (\\d+)%")
    assert job(plan, "b").options["environment"] == {"name": "review/$CI_COMMIT_REF_SLUG", "action": "start"}
    assert job(plan, "c").options["environment"]["action"] == "stop"


def test_trigger_jobs_are_bridges():
    plan = ok(
        "up: {stage: deploy, trigger: group/downstream}\nchild: {trigger: {include: child.yml, strategy: depend}}\nj: {script: x}\n"
    )
    assert (job(plan, "up").type, job(plan, "up").options["trigger"]) == (
        "bridge",
        {"project": "group/downstream"},
    )
    assert job(plan, "child").options["trigger"] == {"include": "child.yml", "strategy": "depend"}
    assert job(plan, "j").type == "build"


def test_hooks_pages_id_tokens_and_secrets_are_accepted():
    plan = ok(
        "pages:\n  script: x\n  pages: true\n  hooks: {pre_get_sources_script: [echo hi]}\n"
        "  id_tokens: {T: {aud: https://x}}\n  secrets: {S: {vault: a/b@c}}\n"
    )
    options = plan.jobs[0].options
    assert options["hooks"] == [{"name": "pre_get_sources_script", "script": ["echo hi"]}]
    assert options["pages"] is True


def test_tags_expand_variables():
    plan = ok("variables: {RUNNER: docker}\nj: {script: x, tags: [$RUNNER, linux]}\n")
    assert plan.jobs[0].tags == ["docker", "linux"]


def test_static_reading_lists_every_job_without_evaluating_rules():
    text = "workflow: {rules: [{when: never}]}\na: {script: x, rules: [{when: never}]}\nb: {script: x, only: [nope]}\n"
    plan = ok(text, static=True)
    assert (plan.filtered, names(plan)) == (False, ["a", "b"])
    assert plan.jobs[1].only == {"refs": ["nope"]}


def test_merged_yaml_shows_extends_and_references_resolved():
    plan = ok(".a: {script: [a]}\nj: {extends: .a, after_script: !reference [.a, script]}\n")
    assert plan.merged_yaml is not None
    assert plan.merged_yaml.startswith("---\n")
    assert "!reference" not in plan.merged_yaml


# ------------------------------------------------------------------------- invalid files


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Please provide content of .gitlab-ci.yml"),
        ("just a string", "Invalid configuration format"),
        ("- a\n- b\n", "Invalid configuration format"),
        (
            "a:\n  b: 1\n c: 2\n",
            "(<unknown>): did not find expected key while parsing a block mapping at line 1 column 1",
        ),
        (
            "a: [1\n",
            "(<unknown>): did not find expected ',' or ']' while parsing a flow sequence at line 1 column 4",
        ),
        ("stages: build\nj: {script: x}\n", "stages config should be an array of strings"),
    ],
)
def test_invalid_configurations(text, message):
    assert errors(text) == [message]


# ----------------------------------------------------------------- GitLab's finer points


def test_workflow_rules_drop_the_default_only():
    text = "workflow: {rules: [{when: always}]}\nj: {script: x}\n"
    plan = ok(text, Context(ref="main", source="merge_request_event"))
    assert names(plan) == ["j"]
    assert plan.jobs[0].only is None


def test_a_last_rule_with_only_when_warns_without_workflow_rules():
    plan = ok("j: {script: x, rules: [{if: $A, when: never}, {when: always}]}\n")
    assert len(plan.warnings) == 1
    assert plan.warnings[0].startswith(
        "jobs:j may allow multiple pipelines to run for a single action due to `rules:when` clause with no "
        "`workflow:rules` - read more: https://docs.gitlab.com/"
    )
    assert ok("workflow: {rules: [{when: always}]}\nj: {script: x, rules: [{when: always}]}\n").warnings == []


def test_only_except_and_start_in_may_not_be_used_with_rules():
    assert "jobs:j config key may not be used with `rules`: only, start_in" in errors(
        "j: {script: x, rules: [{when: always}], only: [main], start_in: 1 day}\n"
    )


def test_never_is_a_rules_when_only():
    assert errors("j: {script: x, when: never}\n") == [
        "jobs:j when should be one of: on_success, on_failure, always, manual, delayed"
    ]


def test_needs_of_some_matrix_instances():
    plan = ok(
        """
        stages: [build, deploy]
        build:
          stage: build
          script: x
          parallel:
            matrix:
              - {PROVIDER: [aws, gcp], STACK: [app, db]}
        deploy:
          stage: deploy
          script: x
          needs:
            - job: build
              parallel:
                matrix:
                  - {PROVIDER: aws, STACK: [app, db]}
        """
    )
    assert job(plan, "deploy").needs == [Need("build: [aws, app]"), Need("build: [aws, db]")]


def test_dependencies_follow_needs_with_artifacts_when_not_given():
    plan = ok(
        "stages: [a, b]\nx: {stage: a, script: s}\ny: {stage: a, script: s, parallel: 2}\n"
        "z: {stage: b, script: s, needs: [x, {job: y, artifacts: false}]}\n"
        "w: {stage: b, script: s, dependencies: [y]}\n"
    )
    assert job(plan, "z").options["dependencies"] == ["x"]
    assert job(plan, "w").options["dependencies"] == ["y 1/2", "y 2/2"]


def test_a_spec_header_document_is_skipped():
    plan = ok("spec:\n  inputs:\n    env: {default: prod}\n---\nj: {script: x}\n")
    assert names(plan) == ["j"]


def test_a_job_name_over_255_characters_is_an_error():
    name = "j" * 256
    assert errors(f"{name}: {{script: x}}\n") == [f"jobs:{name} name is too long (maximum is 255 characters)"]


def test_a_configuration_never_raises_for_an_unexpected_shape():
    plan = read("j: {script: x, artifacts: {reports: [junit]}}\n")
    assert plan.errors == ["jobs:j:artifacts:reports config should be a hash"]
