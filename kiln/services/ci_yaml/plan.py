"""What reading a CI configuration yields, and what it may ask of its surroundings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Need:
    """One entry of a job's `needs` (after `parallel` expansion, one per job instance)."""

    job: str
    artifacts: bool = True
    optional: bool = False


@dataclass(slots=True)
class JobPlan:
    """One job as the pipeline will hold it (kiln.models.ci.CiJob's columns).

    `needs` None: the job waits for every earlier stage; a list (even empty): it waits for
    those jobs only. `options` is what the runner is told and the API shows: `script`,
    `before_script`, `after_script` (lists of strings), `image` and `services` (GitLab's
    runner shapes), `artifacts`, `cache` (lists of GitLab's runner shapes), `dependencies`
    (job names, or None for "every earlier job with artifacts"), `timeout` (seconds),
    `retry` ({"max", "when", "exit_codes"}), `environment` ({"name", "action", "url"}),
    `resource_group`, `interruptible`, `parallel` ({"number", "total"} or the matrix
    values), `coverage` (regex), `trigger` (bridges), `allow_failure_exit_codes`."""

    name: str
    stage: str
    stage_idx: int
    type: str = "build"
    when: str = "on_success"
    start_in: int | None = None
    allow_failure: bool = False
    needs: list[Need] | None = None
    tags: list[str] = field(default_factory=list)
    # The job's variables in order ({"key", "value", "raw"?}), the global ones first.
    variables: list[dict[str, Any]] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    # The job's `only` and `except` as read ({"refs", "variables", "changes"}; `only`
    # defaults to branches and tags when the job has no rules), for the lint endpoint.
    only: dict[str, Any] | None = None
    except_: dict[str, Any] | None = None


@dataclass(slots=True)
class PipelinePlan:
    """`errors` not empty: the configuration is invalid, the pipeline fails with them as its
    `yaml_errors` and no job. `filtered` : `workflow: rules` made no pipeline."""

    stages: list[str] = field(default_factory=list)
    jobs: list[JobPlan] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # `workflow: rules: variables` of the rule that matched, and `workflow: name`.
    variables: list[dict[str, Any]] = field(default_factory=list)
    name: str | None = None
    filtered: bool = False
    # The configuration as read, includes merged (the lint endpoint's merged_yaml).
    merged_yaml: str | None = None
    # The files `include` brought in, as the lint endpoint lists them.
    includes: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class Context:
    """What the configuration may read. `variables` are those `rules: if`,
    `only/except: variables` and `$VAR` in `include` see (predefined CI_* of the pipeline,
    then instance, group, project and pipeline variables). `changed_paths` is None when the
    pipeline has no push to compare (GitLab then takes `rules: changes` as true); `exists`
    says whether any file of the commit matches one of the globs; `read_file` gives a file of
    the commit for `include: local` (None when there is none)."""

    variables: dict[str, str] = field(default_factory=dict)
    ref: str = ""
    tag: bool = False
    source: str = "push"
    changed_paths: Callable[[], list[str]] | None = None
    exists: Callable[[list[str]], bool] = lambda _globs: False
    read_file: Callable[[str], str | None] = lambda _path: None
    max_includes: int = 150
    max_size: int = 314572800
