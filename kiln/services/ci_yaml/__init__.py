"""A project's CI configuration (GitLab's `.gitlab-ci.yml`) read into the plan of a pipeline:
its stages and jobs, as pipeline creation turns them into rows and the lint endpoint shows
them. What the configuration may read from outside (its variables, the repository's files for
`include: local`, `rules: changes` and `rules: exists`) comes in through `Context`, so the
reading itself touches no database and no repository."""

from kiln.services.ci_yaml.context import basic_variables, commit_context
from kiln.services.ci_yaml.plan import Context, JobPlan, Need, PipelinePlan
from kiln.services.ci_yaml.reader import plan_pipeline

__all__ = [
    "Context",
    "JobPlan",
    "Need",
    "PipelinePlan",
    "basic_variables",
    "commit_context",
    "plan_pipeline",
]
