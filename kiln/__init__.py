"""kiln: a self-hostable code-hosting and delivery platform with a GitLab-compatible API."""

__version__ = "0.1.0"
# The GitLab version kiln answers on /version: clients gate features on it.
COMPATIBLE_GITLAB_VERSION = "17.6.0"
