"""Placeholder: routes arrive with their resource."""

from __future__ import annotations

from litestar.handlers import HTTPRouteHandler

ROUTES: list[HTTPRouteHandler] = []
