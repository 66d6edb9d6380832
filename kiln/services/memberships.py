"""A user's memberships (GET /users/:id/memberships, administrators only): the groups and
projects they are a member of."""

from __future__ import annotations

from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.pagination import Page, PageResult
from kiln.policy import Action
from kiln.queries import memberships as finder
from kiln.queries.paging import offset_page
from kiln.schemas.users import MembershipList
from kiln.services import subjects


def of_user(db: Session, actor: Actor, user_id: int, q: MembershipList, page: Page) -> PageResult:
    """The user, then one statement for the page (and one for the count when the page does
    not tell it); items are MembershipRow records."""
    policy.require(actor, Action.ADMIN_USERS)
    subjects.user(db, user_id)
    result = offset_page(db, finder.listing(q.type), page, core=True, params=finder.params(user_id))
    result.items = [finder.MembershipRow._make(row) for row in result.items]
    return result
