"""Mentions give to-dos as GitLab's do: to the users, group members and project members a
text names outside code, only those who may read what it is about, never its author, and
an edit only to whom it did not mention before."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.models import Todo
from kiln.models.namespaces import DEVELOPER, GUEST, REPORTER
from kiln.models.notes import EPIC, ISSUE
from kiln.models.todos import DIRECTLY_ADDRESSED, MENTIONED
from kiln.queries.users import row_by_id
from kiln.services import mentions


def actor_of(db, user):
    return Actor(user=row_by_id(db, user.id), via="personal_access_token", scopes=None)


def mention(db, author, text, issue=None, *, epic=None, previous=None, note=None):
    with transaction(db):
        if epic is not None:
            return mentions.record(
                db,
                actor_of(db, author),
                text,
                target_type=EPIC,
                target_id=epic.id,
                group_id=epic.group_id,
                previous_text=previous,
                note_id=note.id if note is not None else None,
            )
        return mentions.record(
            db,
            actor_of(db, author),
            text,
            target_type=ISSUE,
            target_id=issue.id,
            project_id=issue.project_id,
            previous_text=previous,
            note_id=note.id if note is not None else None,
        )


def todos_of(db, user):
    return [(t.action, t.target_id) for t in db.scalars(select(Todo).where(Todo.user_id == user.id))]


@pytest.fixture
def team(make):
    """A private project in a group: an author (Developer) and a Developer colleague."""
    author, colleague = make.user(username="author"), make.user(username="colleague")
    g = make.group(path="team", members={author: DEVELOPER, colleague: DEVELOPER})
    p = make.project(namespace=g, path="app")
    return author, colleague, g, p


def test_a_mentioned_member_gets_a_mentioned_todo(db, make, team):
    author, colleague, _, p = team
    issue = make.issue(p, author)
    assert mention(db, author, "Ping @colleague please", issue) == [colleague.id]
    todo = db.scalars(select(Todo).where(Todo.user_id == colleague.id)).one()
    assert (todo.action, todo.target_type, todo.target_id, todo.project_id) == (
        MENTIONED,
        ISSUE,
        issue.id,
        p.id,
    )
    assert todo.author_id == author.id
    assert todo.state == "pending"


def test_a_text_starting_with_the_mention_addresses_the_user_directly(db, make, team):
    author, colleague, _, p = team
    other = make.user(username="other")
    make.member(p, other, DEVELOPER)
    issue = make.issue(p, author)
    mention(db, author, "@colleague, @other: could you look? cc @author", issue)
    assert todos_of(db, colleague) == [(DIRECTLY_ADDRESSED, issue.id)]
    assert todos_of(db, other) == [(DIRECTLY_ADDRESSED, issue.id)]


def test_mention_matching_ignores_case(db, make, team):
    author, colleague, _, p = team
    issue = make.issue(p, author)
    assert mention(db, author, "hi @CoLLeague", issue) == [colleague.id]


def test_a_non_member_of_a_private_project_gets_nothing(db, make, team):
    author, colleague, _, p = team
    outsider = make.user(username="outsider")
    issue = make.issue(p, author)
    assert mention(db, author, "@outsider and @colleague", issue) == [colleague.id]
    assert todos_of(db, outsider) == []


def test_anyone_may_be_mentioned_on_a_public_project(db, make):
    author = make.user()
    outsider = make.user(username="outsider")
    p = make.project(owner=author, visibility="public")
    issue = make.issue(p, author)
    assert mention(db, author, "@outsider", issue) == [outsider.id]


def test_a_confidential_issue_mentions_only_those_who_see_it(db, make, team):
    author, _, g, p = team
    guest, reporter, assignee = (
        make.user(username="guest"),
        make.user(username="rep"),
        make.user(username="asg"),
    )
    make.member(g, guest, GUEST)
    make.member(g, reporter, REPORTER)
    make.member(g, assignee, GUEST)
    issue = make.issue(p, author, confidential=True, assignees=[assignee])
    assert sorted(mention(db, author, "@guest @rep @asg", issue)) == sorted([reporter.id, assignee.id])
    assert todos_of(db, guest) == []


def test_an_internal_note_mentions_only_those_who_see_confidential_content(db, make, team):
    author, colleague, g, p = team
    guest = make.user(username="guest")
    make.member(g, guest, GUEST)
    issue = make.issue(p, author)
    note = make.note(issue, author, body="@guest @colleague", internal=True)
    assert mention(db, author, note.body, issue, note=note) == [colleague.id]
    assert db.scalars(select(Todo.note_id).where(Todo.user_id == colleague.id)).one() == note.id


def test_the_author_is_never_mentioned(db, make, team):
    author, colleague, _, p = team
    issue = make.issue(p, author)
    assert mention(db, author, "@author note to self, and @colleague", issue) == [colleague.id]
    assert todos_of(db, author) == []


def test_mentions_in_code_do_not_count(db, make, team):
    author, colleague, g, p = team
    other = make.user(username="other")
    make.member(g, other, DEVELOPER)
    issue = make.issue(p, author)
    text = "see `@colleague`\n\n    @colleague\n\n```\n@colleague\n```\n\nand @other"
    assert mention(db, author, text, issue) == [other.id]
    assert todos_of(db, colleague) == []


def test_an_unchanged_mention_is_not_mentioned_again(db, make, team):
    author, colleague, g, p = team
    other = make.user(username="other")
    make.member(g, other, DEVELOPER)
    issue = make.issue(p, author)
    mention(db, author, "@colleague", issue)
    assert mention(db, author, "@colleague, more words", issue, previous="@colleague") == []
    assert mention(db, author, "@colleague and @other", issue, previous="@colleague") == [other.id]
    assert len(todos_of(db, colleague)) == 1


def test_unknown_names_are_ignored(db, make, team):
    author, colleague, _, p = team
    issue = make.issue(p, author)
    assert mention(db, author, "@nobody and mail@example.com", issue) == []
    assert mention(db, author, "@nobody and @colleague", issue) == [colleague.id]


def test_a_group_mention_reaches_its_members_who_may_read(db, make, team):
    author, colleague, g, p = team
    sub = make.group(path="sub", parent=g)
    sub_member = make.user(username="submember")
    make.member(sub, sub_member, DEVELOPER)
    issue = make.issue(p, author)
    # The sub-group's own member and the members it inherits from the team group.
    found = mention(db, author, "@team/sub heads up", issue)
    assert colleague.id in found
    assert author.id not in found
    # A sub-group member alone does not reach the team's project: no to-do.
    assert sub_member.id not in found
    assert found == [colleague.id]
    # On a project of the sub-group, its own member is reached too.
    deep = make.issue(make.project(namespace=sub, path="deep"), author)
    assert sorted(mention(db, author, "@team/sub heads up", deep)) == sorted([colleague.id, sub_member.id])


def test_a_group_with_mentions_disabled_reaches_no_one(db, make, team):
    author, colleague, g, p = team
    before = make.issue(p, author)
    assert mention(db, author, "@team", before) == [colleague.id]
    g.mentions_disabled = True
    db.commit()
    issue = make.issue(p, author)
    assert mention(db, author, "@team", issue) == []


def test_a_private_group_the_author_cannot_see_reaches_no_one(db, make):
    author = make.user()
    insider = make.user(username="insider")
    make.group(path="closed", members={insider: DEVELOPER})
    make.group(path="joined", members={insider: DEVELOPER, author: DEVELOPER})
    p = make.project(owner=author, visibility="public")
    issue = make.issue(p, author)
    assert mention(db, author, "@closed", issue) == []
    # A private group the author belongs to does reach its members.
    assert mention(db, author, "@joined", issue) == [insider.id]


def test_a_group_mention_stops_at_the_limit(db, make, team, monkeypatch):
    author, _, g, p = team
    for n in range(3):
        make.member(g, make.user(username=f"many{n}"), DEVELOPER)
    assert len(mention(db, author, "@team", make.issue(p, author))) == 4  # all but the author
    monkeypatch.setattr(mentions, "MEMBERS_LIMIT", 2)
    issue = make.issue(p, author)
    assert 1 <= len(mention(db, author, "@team", issue)) <= 2


def test_all_reaches_the_projects_members(db, make, team):
    author, colleague, _, p = team
    direct = make.user(username="direct")
    make.member(p, direct, GUEST)
    issue = make.issue(p, author)
    assert sorted(mention(db, author, "@all please review", issue)) == sorted([colleague.id, direct.id])


def test_all_from_a_non_member_reaches_no_one(db, make):
    owner, outsider = make.user(), make.user()
    p = make.project(owner=owner, visibility="public")
    issue = make.issue(p, outsider)
    assert mention(db, outsider, "@all look", issue) == []
    assert todos_of(db, owner) == []
    member = make.user()
    make.member(p, member, DEVELOPER)
    assert sorted(mention(db, member, "@all look", issue)) == sorted([owner.id])


def test_a_blocked_user_gets_nothing(db, make, team):
    author, colleague, g, p = team
    blocked = make.user(username="blocked", state="blocked")
    make.member(g, blocked, DEVELOPER)
    issue = make.issue(p, author)
    assert mention(db, author, "@blocked @colleague", issue) == [colleague.id]
    assert mention(db, author, "@team", make.issue(p, author)) == [colleague.id]
    assert todos_of(db, blocked) == []


def test_a_confidential_epic_mentions_reporters_and_up(db, make, team):
    author, colleague, g, _ = team
    guest = make.user(username="guest")
    make.member(g, guest, GUEST)
    epic = make.epic(g, make.admin(), confidential=True)
    assert mention(db, author, "@guest @colleague", epic=epic) == [colleague.id]
    todo = db.scalars(select(Todo).where(Todo.user_id == colleague.id)).one()
    assert (todo.target_type, todo.group_id, todo.project_id) == (EPIC, g.id, None)


def test_usernames_reads_plain_text_only():
    assert mentions.usernames("@a `@b` [@c](https://x) @d/e @A") == ["a", "d/e"]
