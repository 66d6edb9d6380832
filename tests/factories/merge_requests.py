"""Merge requests written through the models with the services' rules: an iid from the
project's counter, a source branch with commits written straight into the repository, the
first diff version recorded by the same code that records it for the API."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from kiln.config import Settings
from kiln.db import transaction
from kiln.models import (
    Label,
    LabelLink,
    MergeRequest,
    MergeRequestAssignee,
    MergeRequestReviewer,
    Milestone,
    Project,
)
from kiln.models.merge_requests import draft_title
from kiln.models.notes import MERGE_REQUEST
from kiln.services import internal_ids, merge_request_diffs, repositories
from tests.factories.repositories import Files, write_commit
from tests.factories.users import MadeUser


def _id(thing: Any) -> int:
    return thing if isinstance(thing, int) else thing.id


class MergeRequestFactory:
    db: Session
    settings: Settings

    def seq(self) -> int:
        raise NotImplementedError

    def merge_request(
        self,
        project: Project | int,
        author: MadeUser | int,
        *,
        source_branch: str | None = None,
        target_branch: str | None = None,
        files: Files | None = None,
        source_project: Project | int | None = None,
        title: str | None = None,
        labels: Sequence[Label] = (),
        assignees: Sequence[MadeUser | int] = (),
        reviewers: Sequence[MadeUser | int] = (),
        milestone: Milestone | None = None,
        **fields: Any,
    ) -> MergeRequest:
        """An open merge request from `source_branch` (of `source_project`, a fork, or the
        project itself) into `target_branch` (the default branch). Unless the source branch
        exists already, it is made from the target's tip with one commit of `files` (a new
        file by default). Its first version is recorded; fields as given."""
        project_id = _id(project)
        source_id = _id(source_project) if source_project is not None else project_id
        store = repositories.store(self.settings)
        target_repo = store.open(project_id)
        if target_branch is None:
            target_branch = target_repo.head.shorthand
        n = self.seq()
        source_branch = source_branch or f"feature-{n}"
        source_repo = store.open(source_id)
        if source_repo.references.get(f"refs/heads/{source_branch}") is None:
            start = target_repo.references.get(f"refs/heads/{target_branch}")
            assert start is not None, f"no branch {target_branch}"
            if source_id != project_id and source_repo.get(start.target) is None:
                from kiln.git import picks

                picks.fetch_commit(source_repo, store.path(project_id), str(start.target))
            write_commit(
                source_repo,
                files if files is not None else {f"change-{n}.txt": f"change {n}\n"},
                branch=source_branch,
                start=str(start.target),
                message=f"Change {n}",
            )
        title = title or f"Merge request {n}"
        with transaction(self.db):
            mr = MergeRequest(
                iid=internal_ids.next_iid(self.db, "merge_requests", project_id),
                project_id=project_id,
                source_project_id=source_id,
                source_branch=source_branch,
                target_branch=target_branch,
                author_id=_id(author),
                title=title,
                draft=draft_title(title),
                milestone_id=milestone.id if milestone is not None else None,
                **fields,
            )
            self.db.add(mr)
            self.db.flush()
            for label in labels:
                self.db.add(LabelLink(label_id=label.id, target_type=MERGE_REQUEST, target_id=mr.id))
            for user in assignees:
                self.db.add(MergeRequestAssignee(merge_request_id=mr.id, user_id=_id(user)))
            for user in reviewers:
                self.db.add(MergeRequestReviewer(merge_request_id=mr.id, user_id=_id(user)))
            merge_request_diffs.record_version(self.db, self.settings, mr)
            self.db.flush()
        return mr
