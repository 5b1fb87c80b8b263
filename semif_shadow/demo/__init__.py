"""`semif-shadow demo`: a real shadow trial on this machine, from the first ticket to the weekly review.

One module per role: `workload` and `clinc` (the tickets), `router` (the production service),
`catalog` (the decision type and its two candidates), `clock` (the simulated weeks), `processes`
(children on loopback, always stopped), `traffic` (tickets, progress, late outcomes), `trial` (the
phases in order), `summary` (the closing table), `cli` (the command).
"""
