"""innet's shared root: what every package uses.

exceptions.py   InnetError, the root of every innet exception, and InputError (bad input)
units.py        sizes, rates and durations: parsed from text, formatted for people
jsontypes.py    JSON as a type, for typed seams
paths.py        where things are in a checkout (the data plane, scenarios, results)
argparsing.py   the command lines' argument parser
names.py        what a name may hold (schedules, rounds, cities given by clients) and escaping
packetformat.py the packet format as a value: lanes, header layout, slot and frame sizes, ports
vocabulary.py   the choices among a few (network mode, collective, target, back end, shaping,
                a switch's health), each an enum defined once
versions.py     what is installed: a distribution's version
scapy_layer.py  the innet protocol as a scapy layer: craft, dissect and fuzz innet frames
"""

from innet.exceptions import InnetError, InputError

__all__ = ["InnetError", "InputError"]
