"""Errors of the ``semif-shadow audit`` commands.

The tree::

    AuditError              base: an audit command cannot do what was asked (one line on the command line)
    +-- SampleError         ``audit sample``: no sample can be drawn (a bad week or root, no records)
    +-- SetupError          ``audit serve``: the sample, catalog, tokens or TLS settings do not allow serving

``SampleError`` carries the pipelines' error, translated where the draw is called (``audit/cli.py``).

``audit/cli.py`` turns an ``AuditError`` into that line, in one place. The workbench's HTTP errors
(``audit/workbench/errors.py``) are ``contracts.errors.WireError``s, rendered as JSON bodies instead.
"""

from __future__ import annotations


class AuditError(Exception):
    """Base of every error an audit command stops on: its message is one line for the command line."""


class SampleError(AuditError):
    """The audit sample cannot be drawn."""


class SetupError(AuditError):
    """The workbench cannot start."""
