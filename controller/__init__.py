"""innet controller: the planner, and later the P4Runtime client, round driver, REST API and CLI."""
