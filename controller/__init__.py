"""The innet controller: the core, and the applications on top of it.

Core: the planner (`planner/`, pure: schedules, mixing, cost model, optimiser, simulator), the
P4Runtime client (`p4rt/`), the entries each round installs (`rounds.py`), the testbed under one
controller (`testbed.py`, over the `network.py` seam), its run directory (`rundir.py`) and the
one way a testbed is brought up and down (`bringup.py`).

Applications: the experiment runner (`runner/`, `innet run`) and the testbed service with its
REST API (`service/`, `innet net up` and the commands that talk to it). The `innet` command line
that puts them together is the package above this one, `innet_cli`.
"""
