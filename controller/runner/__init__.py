"""The experiment runner: `innet run SCENARIO` and the service's experiments.

scenario.py     the YAML scenario, checked in full (file:line, key) before anything starts
emulation.py    the scenario resolved once at the emulation's scale: pools, sizes, plans
run.py          a run: every memory point's testbed, every schedule, the baseline
play.py         one round: install, local phase, synchronised exchange, its record
islands.py      the island processes (workers/island.py) and their messages
leaders.py      what each leader is told: rate, offset, just-in-time lag, timeouts
counters.py     the switches' counters around a round
records.py      the round record and the baseline, as written and read back
results/        the results folder: writer, summary, table, plots
cli.py          the `innet run` command
"""
