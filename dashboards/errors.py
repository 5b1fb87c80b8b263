"""The dashboards' errors, surfaced by the ``review`` command as one line and a non-zero exit.

DashboardsError
├── MartsMissing     the marts (or the review week) cannot be read
├── BadReviewConfig  the review config file does not validate
├── RenderFailed     a chart could not be rendered
└── BadPolicy        a policy file cannot be read or replayed on the review week
"""

from __future__ import annotations


class DashboardsError(Exception):
    """Anything the review command reports as one line."""


class MartsMissing(DashboardsError):
    """The marts (or the review week) cannot be read."""


class BadReviewConfig(DashboardsError):
    """The review config file does not validate."""


class RenderFailed(DashboardsError):
    """A chart could not be rendered."""


class BadPolicy(DashboardsError):
    """A policy file cannot be read or replayed on the review week."""
