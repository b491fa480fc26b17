"""One experiment over several machines: which machine each island runs on (`placement`), and
the clocks and physical round trips between them that a run corrects for (`clocks`)."""
