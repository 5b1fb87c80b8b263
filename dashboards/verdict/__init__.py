"""Go, wait or reject: the evidence gathered from the marts, the rules applied to it, and the verdict.

``evidence`` gathers the numbers per decision type and candidate (``policy_evidence`` at a policy,
``calibration`` of the week, ``correctness`` from audits); ``gates`` and ``health`` turn them into
``checks``, ``eta`` says when a bound can be expected to clear; ``decision`` applies the rules.
"""
