"""The planner: schedules, mixing, cost model, optimiser, simulator.

Pure Python: needs no root, Mininet or gRPC.
"""
