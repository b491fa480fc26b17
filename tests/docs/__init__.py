"""The examples in innet's docs and docstrings, found and checked, so that docs cannot drift.

tests/unit/test_docs.py runs what runs without root; tests/netns/test_docs_netns.py runs, as
root, the blocks marked `netns`. The rules for README.md and docs/*.md:

- Every fenced block names its language: `sh`, `python`, `yaml` or `text`.
- A `sh` or `python` block runs in tests/unit/test_docs.py, in a copy of the checkout (every
  command must exit 0, or with the status its comment gives: `# exit status 2`), unless the
  line right above it says why not:

      <!-- docs-test: netns: REASON -->    run as root by tests/netns/test_docs_netns.py (and
                                           parsed by the unit test)
      <!-- docs-test: parse: REASON -->    too long to run: parsed with the program's own
                                           argument parser (innet's build_parser, p4switch's,
                                           the Makefile's targets); every file it reads exists
      <!-- docs-test: options: REASON -->  a synopsis, or a command that cannot run here: the
                                           commands and options it names exist
      <!-- docs-test: skip: REASON -->     cannot run here; a python block is still compiled
                                           and its calls bound to the real signatures
      <!-- vm-commands: ... -->            the VM's provisioning list (tests/unit/test_vm.py)

  An unmarked block that would need root, build a network or take minutes (sudo, make, innet
  net/run, a p4switch on interfaces, build_network) fails without being run.
- A `yaml` block must parse; a `text` block (output, listings) must hold no command.
- An indented (unfenced) code block may hold formulas or listings, never a command or Python.
- Commands in code spans (`innet plan sweep --memory LOW..HIGH`) name real commands and
  options; so do options on their own (`--scale`). Modules, classes, functions and files named
  in the docs exist.

Module docstrings: `>>>` examples are doctests; other Python examples are illustrations that
tests/unit/test_docs.py lists with the reason they cannot run, and whose calls are bound to the
real signatures; command lines are checked as synopses.

`blocks` finds the blocks and commands and runs them, `parsers` reads commands with their
programs' parsers, `names` checks calls and names against the code.
"""
