"""python-gitlab, as published, on a running `kiln serve`: SSH keys (a user's, the current
user's, the administrators' look-up by fingerprint), GPG keys, further e-mail addresses, and
the signature of a commit signed by `git commit -S` and pushed over HTTP."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import gitlab
import pytest
from gitlab.exceptions import GitlabCreateError, GitlabGetError

from tests.api.test_gpg_keys import Gpg
from tests.e2e.test_git_http import with_credentials
from tests.e2e.test_python_gitlab import client_of, create_user, token_for

pytestmark = pytest.mark.e2e


def ssh_key(tmp_path: Path, name: str) -> tuple[str, str]:
    """A new ed25519 public key and its SHA256 fingerprint."""
    path = tmp_path / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(path)], check=True)
    listed = subprocess.run(
        ["ssh-keygen", "-l", "-f", f"{path}.pub"], capture_output=True, text=True, check=True
    )
    return path.with_suffix(".pub").read_text().strip(), listed.stdout.split()[1]


@pytest.fixture
def gpg(tmp_path: Path) -> Iterator[Gpg]:
    """gpg in a home of the test's own, its agent ended with the test."""
    made = Gpg(tmp_path / "gnupg")
    yield made
    subprocess.run(["gpgconf", "--homedir", str(made.home), "--kill", "all"], check=False)


def signed_in(base_url: str, token: str) -> gitlab.Gitlab:
    gl = client_of(base_url, token)
    gl.auth()
    return gl


def test_ssh_keys_through_python_gitlab(root, base_url, unique, tmp_path):
    user = create_user(root, unique("keys"))
    gl = signed_in(base_url, token_for(root, user))
    by_admin, fingerprint = ssh_key(tmp_path, "by-admin")
    own, _ = ssh_key(tmp_path, "own")
    made = user.keys.create({"title": "by admin", "key": by_admin})
    mine = gl.user.keys.create({"title": "own", "key": own, "usage_type": "auth"})
    assert mine.key.split()[:2] == own.split()[:2]
    assert [(k.title, k.usage_type) for k in gl.user.keys.list()] == [
        ("by admin", "auth_and_signing"),
        ("own", "auth"),
    ]
    found = root.keys.get(fingerprint=fingerprint)
    assert (found.id, found.user["username"]) == (made.id, user.username)
    with pytest.raises(GitlabCreateError) as err:
        gl.user.keys.create({"title": "again", "key": own})
    assert err.value.response_code == 400
    mine.delete()
    assert [k.id for k in gl.user.keys.list()] == [made.id]


def test_gpg_keys_and_emails_through_python_gitlab(root, base_url, unique, gpg):
    user = create_user(root, unique("gpg"))
    gl = signed_in(base_url, token_for(root, user))
    fingerprint = gpg.generate(f"E2E <{unique('uid')}@example.com>")
    key = gl.user.gpgkeys.create({"key": gpg.export(fingerprint)})
    assert [k.id for k in gl.user.gpgkeys.list()] == [key.id]
    address = f"{unique('second')}@example.org"
    email = gl.user.emails.create({"email": address})
    assert (email.email, email.confirmed_at) == (address, None)
    assert [e.email for e in gl.user.emails.list()] == [address]
    key.delete()
    email.delete()
    assert (gl.user.gpgkeys.list(), gl.user.emails.list()) == ([], [])


def test_the_signature_of_a_commit_signed_with_git(root, base_url, unique, tmp_path, gpg):
    address = f"{unique('signer')}@example.com"
    user = create_user(root, unique("signer"), email=address)
    token = token_for(root, user)
    gl = signed_in(base_url, token)
    fingerprint = gpg.generate(f"Signer <{address}>")
    gl.user.gpgkeys.create({"key": gpg.export(fingerprint)})
    project = gl.projects.create({"name": unique("signed"), "initialize_with_readme": True})
    work = tmp_path / "work"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GNUPGHOME": str(gpg.home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": "Signer",
        "GIT_AUTHOR_EMAIL": address,
        "GIT_COMMITTER_NAME": "Signer",
        "GIT_COMMITTER_EMAIL": address,
    }

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=work, env=env, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    subprocess.run(
        ["git", "clone", "-q", with_credentials(project.http_url_to_repo, "x", token), str(work)],
        env=env,
        check=True,
        capture_output=True,
    )
    (work / "signed.txt").write_text("signed\n")
    git("add", "signed.txt")
    git("-c", f"user.signingkey={fingerprint}", "commit", "-q", "-S", "-m", "signed work")
    git("push", "-q", "origin", "main")
    sha = git("rev-parse", "HEAD")
    signature = project.commits.get(sha).signature()
    assert signature["signature_type"] == "PGP"
    assert signature["verification_status"] == "verified"
    assert signature["gpg_key_user_email"] == address
    with pytest.raises(GitlabGetError) as err:
        project.commits.get(git("rev-parse", "HEAD~1")).signature()
    assert err.value.response_code == 404


def test_the_signature_of_a_commit_signed_with_git_and_an_ssh_key(root, base_url, unique, tmp_path):
    address = f"{unique('ssh-signer')}@example.com"
    user = create_user(root, unique("ssh-signer"), email=address)
    token = token_for(root, user)
    gl = signed_in(base_url, token)
    public, _ = ssh_key(tmp_path, "signing")
    key = gl.user.keys.create({"title": "signing", "key": public, "usage_type": "signing"})
    project = gl.projects.create({"name": unique("ssh-signed"), "initialize_with_readme": True})
    work = tmp_path / "work"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": "Signer",
        "GIT_AUTHOR_EMAIL": address,
        "GIT_COMMITTER_NAME": "Signer",
        "GIT_COMMITTER_EMAIL": address,
    }

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=work, env=env, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    subprocess.run(
        ["git", "clone", "-q", with_credentials(project.http_url_to_repo, "x", token), str(work)],
        env=env,
        check=True,
        capture_output=True,
    )
    (work / "signed.txt").write_text("signed\n")
    git("add", "signed.txt")
    signing = ("-c", "gpg.format=ssh", "-c", f"user.signingkey={tmp_path / 'signing'}")
    git(*signing, "commit", "-q", "-S", "-m", "ssh signed work")
    git("push", "-q", "origin", "main")
    signature = project.commits.get(git("rev-parse", "HEAD")).signature()
    assert (signature["signature_type"], signature["verification_status"]) == ("SSH", "verified")
    assert signature["key"]["id"] == key.id
