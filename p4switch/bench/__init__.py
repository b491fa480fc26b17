"""p4switch's own benchmarks: they print figures and are not tests (see README.md, "Benchmarks")."""
