"""The review's first screen: the trust strip, the decision banner, the scorecard and the verdict trend.

``trust``, ``banner`` and ``scorecard`` (with its estimators in ``stats``) build what the screen says;
``markup`` writes it as HTML and Markdown. Beside it, what each section shows of the audits (``audits``)
and of a candidate's calibration (``calibration``).
"""
