"""A differential harness: one P4 program, the same P4Runtime writes and the same frames on
several targets (p4switch, BMv2), compared frame by frame (docs/p4diff.md).

Modules: `case` reads a case file (`yamlfile`, `fields`, `frames` for the frames it sends,
`writes` for its P4Runtime batches, `innetround` for innet.p4's entries from the controller's
own code); `netns` builds a target's namespace and veths and opens the harness's sockets;
`targets` starts p4switch or BMv2 in it and programs it; `runner` plays a case on several
targets; `recording` is what a target did (and its JSON file); `compare` finds the first
difference; `cli` is `python -m p4diff`. Generated families of innet.p4 cases: `generate`
writes a case from (seed, index), `script` draws its steps (`moves` the contributions,
`slotmodel` the edge's slots they are steered by, `randomwrites` the batches, `oddframes` the
malformed and other frames).
"""
