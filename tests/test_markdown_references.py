"""GitLab Flavored Markdown references in `*_html` fields: each kind links to what it names
when that exists and the viewer may see it, stays text otherwise, never inside code, and
nothing a title or label holds gets through unescaped."""

from __future__ import annotations

import re

import pytest

from kiln import markdown
from kiln.auth.actor import Actor
from kiln.models.namespaces import DEVELOPER, GUEST, REPORTER
from kiln.queries.users import row_by_id
from kiln.references import References, scan
from kiln.services import subjects
from tests.statements import recording

BASE = "http://kiln.test"


def actor_of(db, user):
    return (
        None if user is None else Actor(user=row_by_id(db, user.id), via="personal_access_token", scopes=None)
    )


def context(db, viewer, *, project=None, group=None):
    actor = actor_of(db, viewer)
    p = subjects.project(db, actor, str(project.id), rows=True) if project is not None else None
    g = subjects.group(db, actor, str(group.id), rows=True) if group is not None else None
    return References(db, actor, BASE, project=p, group=g)


def render(db, viewer, text, **where):
    return markdown.render_gfm(text, context(db, viewer, **where))


def anchors(html):
    return re.findall(r'<a href="([^"]+)"[^>]*>([^<]*)</a>', html)


@pytest.fixture
def place(make):
    """A developer's private project in a group, with an issue, a label, a milestone."""
    dev = make.user(username="dev")
    g = make.group(path="acme", members={dev: DEVELOPER})
    p = make.project(namespace=g, path="app")
    return dev, g, p


def test_an_issue_reference_links_to_the_issue(db, make, place):
    dev, _, p = place
    issue = make.issue(p, dev, title="Crash on start")
    html = render(db, dev, f"See #{issue.iid}.", project=p)
    assert anchors(html) == [(f"{BASE}/acme/app/-/issues/{issue.iid}", f"#{issue.iid}")]
    assert 'data-reference-type="issue"' in html
    assert 'class="gfm gfm-issue"' in html
    assert 'title="Crash on start"' in html


def test_a_closed_issue_says_so(db, make, place):
    dev, _, p = place
    issue = make.issue(p, dev, state="closed")
    assert anchors(render(db, dev, f"#{issue.iid}", project=p))[0][1] == f"#{issue.iid} (closed)"


def test_a_cross_project_issue_reference_links_when_the_viewer_reads_that_project(db, make, place):
    dev, g, p = place
    other = make.project(namespace=g, path="lib")
    issue = make.issue(other, dev)
    html = render(db, dev, f"Blocked by acme/lib#{issue.iid}", project=p)
    assert anchors(html) == [(f"{BASE}/acme/lib/-/issues/{issue.iid}", f"acme/lib#{issue.iid}")]


def test_an_issue_of_a_hidden_project_stays_text(db, make, place):
    dev, _, p = place
    stranger = make.user()
    hidden = make.project(owner=stranger, path="secret")
    issue = make.issue(hidden, stranger)
    text = f"{stranger.username}/secret#{issue.iid}"
    assert anchors(render(db, dev, text, project=p)) == []
    make.member(hidden, dev, GUEST)
    assert anchors(render(db, dev, text, project=p)) == [
        (f"{BASE}/{stranger.username}/secret/-/issues/{issue.iid}", text)
    ]


def test_a_confidential_issue_links_only_for_those_who_see_it(db, make, place):
    dev, g, p = place
    guest, reporter = make.user(), make.user()
    make.member(g, guest, GUEST)
    make.member(g, reporter, REPORTER)
    secret = make.issue(p, dev, confidential=True, title="<b>secret</b>")
    text = f"#{secret.iid}"
    assert anchors(render(db, guest, text, project=p)) == []
    assert render(db, guest, text, project=p) == f"<p>#{secret.iid}</p>"
    shown = make.issue(p, dev)
    assert len(anchors(render(db, guest, f"#{shown.iid}", project=p))) == 1
    assert len(anchors(render(db, reporter, text, project=p))) == 1
    # Its author sees it too.
    assert len(anchors(render(db, dev, text, project=p))) == 1


def test_an_unknown_issue_stays_text(db, make, place):
    dev, _, p = place
    assert render(db, dev, "No #999 here", project=p) == "<p>No #999 here</p>"


def test_a_merge_request_reference_links_to_the_merge_request(db, make, place):
    dev, g, _ = place
    p = make.project_with_repository(namespace=g, path="web")
    mr = make.merge_request(p, dev, title="Fix <the> crash")
    html = render(db, dev, f"Fixed in !{mr.iid}", project=p)
    assert anchors(html) == [(f"{BASE}/acme/web/-/merge_requests/{mr.iid}", f"!{mr.iid}")]
    assert 'data-reference-type="merge_request"' in html
    assert f'data-merge-request="{mr.id}"' in html
    assert f'data-project="{p.id}"' in html
    assert 'data-project-path="acme/web"' in html
    assert f'data-iid="{mr.iid}"' in html
    assert 'title="Fix &lt;the&gt; crash"' in html
    assert 'class="gfm gfm-merge_request"' in html


def test_a_merged_or_closed_merge_request_says_so(db, make, place):
    dev, g, _ = place
    p = make.project_with_repository(namespace=g, path="web")
    merged = make.merge_request(p, dev, state="merged")
    closed = make.merge_request(p, dev, state="closed")
    found = anchors(render(db, dev, f"!{merged.iid} !{closed.iid}", project=p))
    assert [text for _, text in found] == [f"!{merged.iid} (merged)", f"!{closed.iid} (closed)"]


def test_a_cross_project_merge_request_reference_links_when_the_viewer_reads_them(db, make, place):
    dev, g, p = place
    other = make.project_with_repository(namespace=g, path="web")
    mr = make.merge_request(other, dev)
    html = render(db, dev, f"See acme/web!{mr.iid}", project=p)
    assert anchors(html) == [(f"{BASE}/acme/web/-/merge_requests/{mr.iid}", f"acme/web!{mr.iid}")]


def test_unknown_and_hidden_merge_requests_stay_text(db, make, place):
    dev, g, _ = place
    p = make.project_with_repository(namespace=g, path="web")
    guest = make.user()
    make.member(p, guest, GUEST)
    mr = make.merge_request(p, dev)
    assert render(db, dev, "No !999 here", project=p) == "<p>No !999 here</p>"
    # A private project's merge requests are for its Reporters and up.
    assert render(db, guest, f"See !{mr.iid}", project=p) == f"<p>See !{mr.iid}</p>"
    stranger = make.user()
    hidden = make.project_with_repository(owner=stranger, path="secret")
    theirs = make.merge_request(hidden, stranger)
    text = f"{stranger.username}/secret!{theirs.iid}"
    assert anchors(render(db, dev, text, project=p)) == []
    refs = context(db, dev, project=p)
    assert refs.hides_any(f"mentioned in merge request {text}")
    assert not refs.hides_any(f"mentioned in merge request !{mr.iid}")


def test_label_references_by_title_quoted_title_and_id(db, make, place):
    dev, g, p = place
    bug = make.label(project=p, title="bug", description="Something broken")
    multi = make.label(group=g, title="needs review")
    html = render(db, dev, f'~bug, ~"needs review" and ~{bug.id}', project=p)
    assert anchors(html) == [
        (f"{BASE}/acme/app/-/issues?label_name=bug", "bug"),
        (f"{BASE}/acme/app/-/issues?label_name=needs%20review", "needs review"),
        (f"{BASE}/acme/app/-/issues?label_name=bug", "bug"),
    ]
    assert f'data-label="{multi.id}"' in html
    assert 'title="Something broken"' in html


def test_a_label_of_another_project_stays_text(db, make, place):
    dev, _, p = place
    other = make.project(owner=dev)
    make.label(project=other, title="elsewhere")
    assert anchors(render(db, dev, "~elsewhere", project=p)) == []
    assert len(anchors(render(db, dev, "~elsewhere", project=other))) == 1


def test_milestone_references_by_title_quoted_title_and_iid(db, make, place):
    dev, g, p = place
    v1 = make.milestone(project=p, title="v1.0")
    group_ms = make.milestone(group=g, title="Q3 plan")
    html = render(db, dev, f'Due %v1.0. Then %"Q3 plan", and %{v1.iid}', project=p)
    assert anchors(html) == [
        (f"{BASE}/acme/app/-/milestones/{v1.iid}", "%v1.0"),
        (f"{BASE}/groups/acme/-/milestones/{group_ms.iid}", "%Q3 plan"),
        (f"{BASE}/acme/app/-/milestones/{v1.iid}", "%v1.0"),
    ]


def test_an_epic_reference_links_in_the_projects_group(db, make, place):
    dev, g, p = place
    epic = make.epic(g, dev, title="Big plan")
    html = render(db, dev, f"Part of &{epic.iid}", project=p)
    assert anchors(html) == [(f"{BASE}/groups/acme/-/epics/{epic.iid}", f"&amp;{epic.iid}")]
    html = render(db, dev, f"Part of acme&{epic.iid}", group=g)
    assert anchors(html) == [(f"{BASE}/groups/acme/-/epics/{epic.iid}", f"acme&amp;{epic.iid}")]


def test_a_confidential_epic_stays_text_for_a_guest(db, make, place):
    dev, g, _p = place
    guest = make.user()
    make.member(g, guest, GUEST)
    epic = make.epic(g, make.admin(), confidential=True)
    assert anchors(render(db, guest, f"&{epic.iid}", group=g)) == []
    assert len(anchors(render(db, dev, f"&{epic.iid}", group=g))) == 1  # a Reporter and up
    assert len(anchors(render(db, make.admin(), f"&{epic.iid}", group=g))) == 1


def test_user_group_and_all_mentions_link(db, make, place):
    dev, _, p = place
    alice = make.user(username="alice")
    html = render(db, dev, "Hi @Alice, @acme and @all; not a@b.com nor @nobody", project=p)
    assert anchors(html) == [
        (f"{BASE}/alice", "@Alice"),
        (f"{BASE}/acme", "@acme"),
        (f"{BASE}/acme/app", "@all"),
    ]
    assert f'data-user="{alice.id}"' in html


def test_a_private_group_the_viewer_cannot_see_is_not_linked(db, make, place):
    dev, _, p = place
    hidden = make.group(path="hidden-team")
    assert anchors(render(db, dev, "@hidden-team", project=p)) == []
    make.member(hidden, dev, GUEST)
    assert anchors(render(db, dev, "@hidden-team", project=p)) == [(f"{BASE}/hidden-team", "@hidden-team")]


def test_references_in_code_spans_and_blocks_are_untouched(db, make, place):
    dev, _, p = place
    issue = make.issue(p, dev)
    make.label(project=p, title="bug")
    text = f"`#{issue.iid} ~bug @dev`\n\n    #{issue.iid} ~bug @dev\n\n```\n#{issue.iid}\n```\n"
    html = render(db, dev, text, project=p)
    assert "<a" not in html
    assert html == markdown.render(text)
    assert len(anchors(render(db, dev, f"#{issue.iid} ~bug @dev", project=p))) == 3


def test_references_in_link_text_are_not_linked_again(db, make, place):
    dev, _, p = place
    issue = make.issue(p, dev)
    html = render(db, dev, f"[#{issue.iid}](https://example.com)", project=p)
    assert anchors(html) == [("https://example.com", f"#{issue.iid}")]


def test_a_label_title_holding_html_is_escaped(db, make, place):
    dev, _, p = place
    make.label(project=p, title="<script>alert(1)</script>", description='" onmouseover="x')
    html = render(db, dev, '~"<script>alert(1)</script>"', project=p)
    assert "<script>" not in html
    assert "onmouseover=" not in html.replace("&quot; onmouseover=&quot;", "")
    assert anchors(html) == [
        (
            f"{BASE}/acme/app/-/issues?label_name=%3Cscript%3Ealert%281%29%3C/script%3E",
            "&lt;script&gt;alert(1)&lt;/script&gt;",
        )
    ]


def test_an_issue_title_holding_html_is_escaped(db, make, place):
    dev, _, p = place
    issue = make.issue(p, dev, title='"><img src=x onerror=alert(1)>')
    html = render(db, dev, f"#{issue.iid}", project=p)
    assert "<img" not in html
    assert "onerror=alert" not in html.replace("onerror=alert(1)&gt;", "")
    assert len(anchors(html)) == 1
    assert 'title="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"' in html


def test_typed_html_and_javascript_links_stay_harmless(db, make, place):
    dev, _, p = place
    html = render(
        db, dev, '<a class="gfm" href="javascript:alert(1)">#1</a> [x](javascript:alert(1))', project=p
    )
    assert "<a class" not in html
    assert not re.search(r"<a [^>]*href=\"javascript", html)


def test_texts_without_references_render_as_before(db, make, place):
    dev, _, p = place
    text = "**bold** and a [link](https://example.com)"
    assert render(db, dev, text, project=p) == markdown.render(text)


def test_a_pages_texts_cost_one_statement_per_kind(db, make, place, runtime):
    dev, g, _ = place
    p = make.project_with_repository(namespace=g, path="web")
    issues = [make.issue(p, dev) for _ in range(5)]
    mrs = [make.merge_request(p, dev) for _ in range(5)]
    for n in range(5):
        make.label(project=p, title=f"l{n}")
    texts = [
        f"#{i.iid} !{mr.iid} ~l{n} @dev %missing" for n, (i, mr) in enumerate(zip(issues, mrs, strict=True))
    ]
    refs = context(db, dev, project=p)
    with recording(runtime.engine) as seen:
        refs.prefetch(texts)
        rendered = [markdown.render_gfm(text, refs) for text in texts]
    # issues, merge requests, labels, milestones, users: one each for all five texts.
    assert len(seen) == 5
    assert all(len(anchors(html)) == 4 for html in rendered)


def test_scan_finds_each_kind_outside_code():
    found = scan('#1 group/proj#2 !3 ~bug ~"a b" ~7 %v1 %"x y" &4 grp&5 @user `@code`')
    assert [(r.kind, r.key) for r in found] == [
        ("issue", ("", 1)),
        ("issue", ("group/proj", 2)),
        ("merge_request", ("", 3)),
        ("label", "bug"),
        ("label", "a b"),
        ("label", 7),
        ("milestone", "v1"),
        ("milestone", "x y"),
        ("epic", ("", 4)),
        ("epic", ("grp", 5)),
        ("user", "user"),
    ]


HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "javascript:alert(1)",
    "[x](javascript:alert(1))",
    "`",
    "```",
    "*",
    "\n\n",
    "    ",
    "~",
    '~"',
    "#",
    "%",
    "&",
    "@",
]


def test_hostile_texts_around_references_never_give_markup(db, make, place):
    """Any mix of references, hostile titles and Markdown punctuation: no element or
    attribute beyond what render allows, no script URL."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    dev, _, p = place
    hostile_label = make.label(project=p, title='<script>alert(1)</script>" onclick="x')
    issue = make.issue(p, dev, title='"><svg onload=alert(1)>')
    refs = context(db, dev, project=p)
    pieces = st.sampled_from(
        [
            *HOSTILE,
            f"#{issue.iid}",
            f'~"{hostile_label.title}"',
            f"~{hostile_label.id}",
            "@dev",
            "@all",
            " ",
            "x",
        ]
    )

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(pieces, max_size=12).map("".join))
    def check(text):
        html = markdown.render_gfm(text, refs)
        tags = re.findall(r"<([a-z0-9]+)([^>]*)>", html)
        assert {name for name, _ in tags} <= markdown._TAGS
        for _, attributes in tags:
            names = set(re.findall(r'\s([a-z\-]+)="', attributes))
            assert not any(name.startswith("on") for name in names)
            assert "javascript:" not in attributes

    check()


def test_a_long_text_links_its_references_too(db, make, place):
    dev, _, p = place
    issue = make.issue(p, dev)
    html = render(db, dev, "word " * 2000 + f"see #{issue.iid}", project=p)
    assert anchors(html) == [(f"{BASE}/acme/app/-/issues/{issue.iid}", f"#{issue.iid}")]


def test_unquoted_names_end_where_gitlabs_do():
    found = scan('%v1.0. %2024-Q1, %"Sprint: 3" ~bug? ~12-x ~12 @user. mail@example.com')
    assert [(r.kind, r.key) for r in found] == [
        ("milestone", "v1.0"),
        ("milestone", "2024-Q1"),
        ("milestone", "Sprint: 3"),
        ("label", "bug"),
        ("label", "12-x"),
        ("label", 12),
        ("user", "user"),
    ]
