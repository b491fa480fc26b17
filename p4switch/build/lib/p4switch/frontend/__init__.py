"""P4_16 front-end: preprocess with cpp, parse the subset p4switch runs, check types."""
