"""Audits: people say who was right on a sample of decisions with known inclusion probabilities.

``audit sample`` draws the week's sample from the records; ``audit serve`` is the workbench page where
auditors answer it. Answers are outcome rows with ``source = 'audit'`` (records v1.2); the pipelines'
``correctness`` mart turns them into design-weighted estimates.
"""
