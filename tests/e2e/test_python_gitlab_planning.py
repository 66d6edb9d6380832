"""python-gitlab, as published, planning with a running `kiln serve`: issues (create, list
with filters, update, close, labels), issue links, labels, milestones, epics, notes,
discussions and award emoji, each as a user would script it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gitlab
import pytest
from gitlab.exceptions import GitlabCreateError, GitlabGetError

from tests.e2e.test_python_gitlab import client_of, create_user, token_for

pytestmark = pytest.mark.e2e


class Team:
    """An owner's group with a project, and a Developer and an outsider, each with a client."""

    def __init__(self, root: gitlab.Gitlab, base_url: str, unique: Callable[[str], str]) -> None:
        self.owner = create_user(root, unique("plan-owner"))
        self.dev = create_user(root, unique("plan-dev"))
        self.outsider = create_user(root, unique("plan-out"))
        self.gl = client_of(base_url, token_for(root, self.owner))
        self.dev_gl = client_of(base_url, token_for(root, self.dev))
        self.outsider_gl = client_of(base_url, token_for(root, self.outsider))
        path = unique("plan")
        self.group = self.gl.groups.create({"name": path, "path": path})
        self.group.members.create({"user_id": self.dev.id, "access_level": 30})
        self.project = self.gl.projects.create({"name": "app", "namespace_id": self.group.id})


@pytest.fixture
def team(root: gitlab.Gitlab, base_url: str, unique: Callable[[str], str]) -> Team:
    return Team(root, base_url, unique)


def titles(items: list[Any]) -> list[str]:
    return sorted(item.title for item in items)


# ---------------------------------------------------------------------------- issues


def test_issues_create_get_update_close_reopen_delete(team):
    project = team.project
    issue = project.issues.create(
        {
            "title": "Crash",
            "description": "It **breaks**",
            "labels": ["bug", "ui"],
            "assignee_ids": [team.dev.id],
        }
    )
    assert issue.iid == 1
    assert issue.state == "opened"
    assert sorted(issue.labels) == ["bug", "ui"]
    assert [a["id"] for a in issue.assignees] == [team.dev.id]
    assert issue.author["id"] == team.owner.id
    # `references` is also a method name of python-gitlab's issue objects.
    assert issue.attributes["references"]["short"] == "#1"
    assert issue.web_url.endswith(f"/{project.path_with_namespace}/-/issues/1")

    fetched = project.issues.get(issue.iid)
    assert (fetched.title, fetched.description) == ("Crash", "It **breaks**")

    fetched.title = "Crash on start"
    fetched.labels = ["bug"]
    fetched.save()
    again = project.issues.get(issue.iid)
    assert again.title == "Crash on start"
    assert again.labels == ["bug"]
    again.add_labels = "urgent"
    again.remove_labels = "bug"
    again.save()
    again = project.issues.get(issue.iid)
    assert again.labels == ["urgent"]
    events = again.resourcelabelevents.list(get_all=True)
    assert [(e.action, e.label["name"]) for e in events][-2:] in (
        [("add", "urgent"), ("remove", "bug")],
        [("remove", "bug"), ("add", "urgent")],
    )

    again.state_event = "close"
    again.save()
    closed = project.issues.get(issue.iid)
    assert closed.state == "closed"
    # `closed_by` is also a method (the merge requests closing the issue).
    assert closed.attributes["closed_by"]["id"] == team.owner.id
    closed.state_event = "reopen"
    closed.save()
    assert project.issues.get(issue.iid).state == "opened"

    project.issues.delete(issue.iid)
    with pytest.raises(GitlabGetError) as err:
        project.issues.get(issue.iid)
    assert err.value.response_code == 404


def test_issues_list_with_filters(team):
    project = team.project
    bug = project.issues.create({"title": "Parser bug", "labels": "bug"})
    feature = project.issues.create(
        {"title": "Shiny feature", "labels": "feature", "assignee_ids": [team.dev.id]}
    )
    done = project.issues.create({"title": "Old bug", "labels": "bug"})
    done.state_event = "close"
    done.save()

    assert titles(project.issues.list(get_all=True)) == ["Old bug", "Parser bug", "Shiny feature"]
    assert titles(project.issues.list(state="opened", get_all=True)) == ["Parser bug", "Shiny feature"]
    assert titles(project.issues.list(labels="bug", get_all=True)) == ["Old bug", "Parser bug"]
    assert titles(project.issues.list(labels=["bug"], state="opened", get_all=True)) == ["Parser bug"]
    assert titles(project.issues.list(search="shiny", get_all=True)) == ["Shiny feature"]
    assert titles(project.issues.list(assignee_id=team.dev.id, get_all=True)) == ["Shiny feature"]
    assert [
        i.iid
        for i in project.issues.list(
            iids=[bug.iid, feature.iid], get_all=True, order_by="created_at", sort="asc"
        )
    ] == [bug.iid, feature.iid]
    assert titles(project.issues.list(**{"not[labels]": "bug"}, get_all=True)) == ["Shiny feature"]

    # Across projects: the group's and the caller's.
    assert titles(team.group.issues.list(labels="bug", get_all=True)) == ["Old bug", "Parser bug"]
    assert titles(team.dev_gl.issues.list(scope="assigned_to_me", get_all=True)) == ["Shiny feature"]
    assert "Parser bug" in titles(team.gl.issues.list(scope="all", search="parser", get_all=True))
    # Paging follows the Link header.
    pages = project.issues.list(per_page=1, iterator=True)
    assert sorted(i.iid for i in pages) == sorted([bug.iid, feature.iid, done.iid])
    assert pages.total == 3


def test_a_private_projects_issues_are_hidden_from_outsiders(team):
    team.project.issues.create({"title": "secret"})
    with pytest.raises(GitlabGetError) as err:
        team.outsider_gl.projects.get(team.project.id, lazy=True).issues.get(1)
    assert err.value.response_code == 404
    assert team.outsider_gl.issues.list(scope="all", search="secret", get_all=True) == []


def test_issue_subscription_time_tracking_and_participants(team):
    issue = team.project.issues.create({"title": "Track me"})
    issue.unsubscribe()
    issue.subscribe()
    assert team.project.issues.get(issue.iid).subscribed is True
    issue.time_estimate("3h30m")
    issue.add_spent_time("1h")
    # time_stats() answers from the object's own copy when it has one: read it afresh.
    stats = team.project.issues.get(issue.iid).time_stats()
    assert (stats["time_estimate"], stats["total_time_spent"]) == (12600, 3600)
    assert [p["id"] for p in issue.participants()] == [team.owner.id]


# ---------------------------------------------------------------------------- issue links


def test_issue_links(team):
    project = team.project
    first = project.issues.create({"title": "First"})
    second = project.issues.create({"title": "Second"})
    source, target = first.links.create(
        {"target_project_id": project.id, "target_issue_iid": second.iid, "link_type": "blocks"}
    )
    assert (source.iid, target.iid) == (first.iid, second.iid)
    linked = first.links.list()
    assert [(i.iid, i.link_type) for i in linked] == [(second.iid, "blocks")]
    assert [(i.iid, i.link_type) for i in second.links.list()] == [(first.iid, "is_blocked_by")]
    first.links.delete(linked[0].issue_link_id)
    assert first.links.list() == []


# ---------------------------------------------------------------------------- labels


def test_project_labels(team):
    project = team.project
    label = project.labels.create({"name": "needs review", "color": "#FF0000", "description": "Look"})
    assert (label.name, label.color) == ("needs review", "#FF0000")
    assert [lb.name for lb in project.labels.list(get_all=True)] == ["needs review"]
    fetched = project.labels.get("needs review")
    assert fetched.id == label.id
    fetched.new_name = "reviewed"
    fetched.save()
    assert project.labels.get(label.id).name == "reviewed"
    fetched = project.labels.get(label.id)
    fetched.subscribe()
    assert project.labels.get(label.id).subscribed is True
    project.issues.create({"title": "Labelled", "labels": ["reviewed"]})
    counted = project.labels.list(with_counts=True, get_all=True)
    assert counted[0].open_issues_count == 1
    project.labels.delete(label.id)
    assert project.labels.list(get_all=True) == []


def test_group_labels_are_seen_by_the_project(team):
    group_label = team.group.labels.create({"name": "team-wide", "color": "#00AA00"})
    listed = team.project.labels.list(get_all=True)
    assert [(lb.name, lb.is_project_label) for lb in listed] == [("team-wide", False)]
    issue = team.project.issues.create({"title": "With a group label", "labels": ["team-wide"]})
    assert issue.labels == ["team-wide"]
    group_label.description = "changed"
    group_label.save()
    assert team.group.labels.get(group_label.id).description == "changed"


# ---------------------------------------------------------------------------- milestones


def test_project_milestones(team):
    project = team.project
    milestone = project.milestones.create({"title": "v1.0", "due_date": "2030-01-31"})
    assert (milestone.iid, milestone.state, milestone.due_date) == (1, "active", "2030-01-31")
    issue = project.issues.create({"title": "For v1", "milestone_id": milestone.id})
    assert issue.milestone["id"] == milestone.id
    assert titles(project.issues.list(milestone="v1.0", get_all=True)) == ["For v1"]
    assert [i.iid for i in milestone.issues()] == [issue.iid]
    milestone.state_event = "close"
    milestone.save()
    assert project.milestones.get(milestone.id).state == "closed"
    assert project.milestones.list(state="active", get_all=True) == []
    project.milestones.delete(milestone.id)


def test_group_milestones(team):
    milestone = team.group.milestones.create({"title": "Q3", "start_date": "2030-07-01"})
    assert [m.title for m in team.group.milestones.list(get_all=True)] == ["Q3"]
    issue = team.project.issues.create({"title": "In Q3", "milestone_id": milestone.id})
    assert issue.milestone["title"] == "Q3"


# ---------------------------------------------------------------------------- epics


def test_epics(team):
    group = team.group
    epic = group.epics.create({"title": "Big plan", "labels": "roadmap", "description": "All of it"})
    assert (epic.iid, epic.state, epic.labels) == (1, "opened", ["roadmap"])
    assert [e.title for e in group.epics.list(get_all=True)] == ["Big plan"]
    fetched = group.epics.get(epic.iid)
    fetched.title = "Bigger plan"
    fetched.save()
    assert group.epics.get(epic.iid).title == "Bigger plan"

    issue = team.project.issues.create({"title": "Part of the plan"})
    fetched.issues.create({"issue_id": issue.id})
    assert [i.iid for i in fetched.issues.list()] == [issue.iid]

    fetched.state_event = "close"
    fetched.save()
    assert group.epics.get(epic.iid).state == "closed"
    group.epics.delete(epic.iid)
    with pytest.raises(GitlabGetError):
        group.epics.get(epic.iid)


# ---------------------------------------------------------------------------- notes


def test_issue_notes(team):
    issue = team.project.issues.create({"title": "Discuss"})
    note = issue.notes.create({"body": "First thought"})
    assert (note.body, note.author["id"], note.system) == ("First thought", team.owner.id, False)
    assert [n.body for n in issue.notes.list(get_all=True) if not n.system] == ["First thought"]
    note.body = "Second thought"
    note.save()
    assert issue.notes.get(note.id).body == "Second thought"
    assert team.project.issues.get(issue.iid).user_notes_count == 1
    issue.notes.delete(note.id)
    assert [n for n in issue.notes.list(get_all=True) if not n.system] == []


def test_a_mention_in_a_note_gives_a_todo(team):
    issue = team.project.issues.create({"title": "Ask"})
    issue.notes.create({"body": f"@{team.dev.username} could you look?"})
    todos = team.dev_gl.todos.list(get_all=True)
    assert [(t.action_name, t.target["iid"]) for t in todos] == [("directly_addressed", issue.iid)]


def test_epic_notes(team):
    epic = team.group.epics.create({"title": "Noted"})
    note = epic.notes.create({"body": "On the epic"})
    assert [n.body for n in epic.notes.list(get_all=True) if not n.system] == ["On the epic"]
    epic.notes.delete(note.id)


# ---------------------------------------------------------------------------- discussions


def test_issue_discussions(team):
    issue = team.project.issues.create({"title": "Threads"})
    discussion = issue.discussions.create({"body": "Start"})
    reply = discussion.notes.create({"body": "Reply"})
    assert reply.body == "Reply"
    listed = issue.discussions.list(get_all=True)
    threads = [d for d in listed if not d.attributes["notes"][0]["system"]]
    assert [[n["body"] for n in d.attributes["notes"]] for d in threads] == [["Start", "Reply"]]
    fetched = issue.discussions.get(discussion.id)
    assert fetched.id == discussion.id


# ---------------------------------------------------------------------------- award emoji


def test_award_emoji(team):
    issue = team.project.issues.create({"title": "Vote"})
    award = issue.awardemojis.create({"name": "thumbsup"})
    assert (award.name, award.user["id"]) == ("thumbsup", team.owner.id)
    assert team.project.issues.get(issue.iid).upvotes == 1
    with pytest.raises(GitlabCreateError):
        issue.awardemojis.create({"name": "thumbsup"})
    assert [a.name for a in issue.awardemojis.list()] == ["thumbsup"]
    issue.awardemojis.delete(award.id)
    assert team.project.issues.get(issue.iid).upvotes == 0

    note = issue.notes.create({"body": "Nice"})
    on_note = note.awardemojis.create({"name": "tada"})
    assert [a.name for a in note.awardemojis.list()] == ["tada"]
    note.awardemojis.delete(on_note.id)
