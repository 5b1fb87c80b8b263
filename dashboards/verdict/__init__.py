"""Go, wait or reject: the evidence gathered from the marts, the rules applied to it, and the verdict.

``evidence`` gathers the numbers per decision type and candidate (``policy_evidence`` at a policy);
``rules`` names every rule and its kind; ``gates``, ``health`` and ``audited`` turn the evidence and the
audit marts into ``checks``; ``eta`` says when a bound can be expected to clear; ``decision.judge``
applies every rule. Nothing here renders: the review's pages are drawn by ``dashboards.screen``.
"""
