"""python-gitlab, as published, working project and group issue boards and their lists on a
running `kiln serve`."""

from __future__ import annotations

import pytest
from gitlab.exceptions import GitlabCreateError, GitlabGetError, GitlabUpdateError

from tests.e2e.test_python_gitlab import client_of, create_user, token_for

pytestmark = pytest.mark.e2e


def test_project_boards_and_their_lists(root, base_url, unique):
    owner = create_user(root, unique("planner"))
    gl = client_of(base_url, token_for(root, owner))
    path = unique("boarded")
    group = gl.groups.create({"name": path, "path": path})
    project = gl.projects.create({"name": "app", "namespace_id": group.id})
    assert project.boards.list() == []

    board = project.boards.create({"name": "Development"})
    assert (board.name, board.project["path_with_namespace"], board.group) == (
        "Development",
        f"{path}/app",
        None,
    )
    assert board.attributes["lists"] == []

    todo = project.labels.create({"name": "To Do", "color": "#F0AD4E"})
    doing = group.labels.create({"name": "Doing", "color": "#5CB85C"})
    milestone = project.milestones.create({"title": "1.0"})
    first = board.lists.create({"label_id": todo.id})
    second = board.lists.create({"label_id": doing.id})
    third = board.lists.create({"milestone_id": milestone.id})
    fourth = board.lists.create({"assignee_id": owner.id})
    assert [(x.position, x.label and x.label["name"]) for x in (first, second, third, fourth)] == [
        (0, "To Do"),
        (1, "Doing"),
        (2, None),
        (3, None),
    ]
    assert (third.milestone["title"], fourth.assignee["username"]) == ("1.0", owner.username)

    with pytest.raises(GitlabCreateError) as err:
        board.lists.create({"label_id": todo.id})
    assert (err.value.response_code, err.value.error_message) == (400, "Label has already been taken")

    # Lists show by kind (labels, assignees, milestones), each kind by position.
    listed = board.lists.list()
    assert [x.id for x in listed] == [first.id, second.id, fourth.id, third.id]
    moved = listed[0]
    moved.position = 1
    moved.save()
    assert [(x.id, x.position) for x in board.lists.list()][:2] == [(second.id, 0), (first.id, 1)]
    with pytest.raises(GitlabUpdateError) as err:
        board.lists.update(first.id, {"position": 10})
    assert err.value.response_code == 400

    board.lists.get(second.id).delete()
    assert [(x.id, x.position) for x in board.lists.list()] == [(first.id, 0), (fourth.id, 2), (third.id, 1)]
    with pytest.raises(GitlabGetError):
        board.lists.get(second.id)

    board.name = "Renamed"
    board.hide_closed_list = True
    board.save()
    again = project.boards.get(board.id)
    assert (again.name, again.hide_closed_list, len(again.attributes["lists"])) == ("Renamed", True, 3)
    project.boards.update(board.id, {"labels": "To Do", "milestone_id": milestone.id, "weight": 3})
    scoped = project.boards.get(board.id)
    assert ([x["name"] for x in scoped.labels], scoped.milestone["id"], scoped.weight) == (
        ["To Do"],
        milestone.id,
        3,
    )

    other = project.boards.create({"name": "Second"})
    assert [b.id for b in project.boards.list()] == [board.id, other.id]
    board.delete()
    assert [b.id for b in project.boards.list()] == [other.id]
    with pytest.raises(GitlabGetError) as err:
        project.boards.get(board.id)
    assert err.value.response_code == 404


def test_group_boards_and_who_may_change_them(root, base_url, unique):
    owner = create_user(root, unique("gplanner"))
    guest = create_user(root, unique("gguest"))
    gl = client_of(base_url, token_for(root, owner))
    path = unique("gboarded")
    group = gl.groups.create({"name": path, "path": path})
    group.members.create({"user_id": guest.id, "access_level": 10})

    board = group.boards.create({"name": "Team"})
    assert (board.group["id"], board.project) == (group.id, None)
    label = group.labels.create({"name": "Review", "color": "#428BCA"})
    made = board.lists.create({"label_id": label.id})
    assert (made.label["id"], made.position) == (label.id, 0)
    assert [x.id for x in group.boards.get(board.id).lists.list()] == [made.id]

    as_guest = client_of(base_url, token_for(root, guest)).groups.get(group.id)
    assert [b.id for b in as_guest.boards.list()] == [board.id]
    with pytest.raises(GitlabCreateError) as err:
        as_guest.boards.create({"name": "Mine"})
    assert err.value.response_code == 403

    made.delete()
    board.delete()
    assert group.boards.list() == []
