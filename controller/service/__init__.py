"""The testbed service: one testbed brought up, programmed and watched, behind a REST API.

options.py      its options and what they say once checked (slot pool, planner parameters)
server.py       the service process: claim the run directory, bring up, serve, tear down
api.py          the FastAPI app; bodies.py its request models; views.py its JSON views
limits.py       what the service accepts: ranges of planner parameters, sizes of schedules
guards.py       the body-size bound (413) and error answers any input can be put in
experiment.py   experiments on the running testbed (the runner of controller/runner/)
client.py       the running service as the `innet` commands reach it
cli.py          `innet net up|down`, `serve`, `clean`; commands.py the commands that ask it
"""
