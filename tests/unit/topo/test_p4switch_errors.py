"""p4switch is a project of its own: its errors are not InnetErrors, so innet's calls into it come
out as topo's, bad input kept as bad input (exit status 2) and failures as failures (1)."""

from __future__ import annotations

import p4switch
import pytest
from p4.v1 import p4runtime_pb2

from innet.exceptions import InnetError, InputError
from innet.paths import INNET_P4
from topo.exceptions import P4SwitchFailedError, P4SwitchRefusedError, from_p4switch
from topo.local_switch import LocalSwitch


def test_bad_input_to_p4switch_is_bad_input_to_innet() -> None:
    refused = pytest.raises(P4SwitchRefusedError, match=r"x\.p4:3:7: error: no")
    with refused as caught, from_p4switch():
        raise p4switch.P4CompileError("x.p4", 3, 7, "no")
    assert isinstance(caught.value, InputError) and caught.value.exit_status == 2
    assert isinstance(caught.value.__cause__, p4switch.P4CompileError)


def test_a_failure_of_p4switch_is_a_failure_of_innet() -> None:
    with pytest.raises(P4SwitchFailedError, match="not answering") as caught, from_p4switch():
        raise p4switch.ControlError("not answering")
    assert not isinstance(caught.value, InputError) and caught.value.exit_status == 1


def test_other_errors_pass_through() -> None:
    with pytest.raises(KeyError), from_p4switch():
        raise KeyError("k")


def test_p4switch_s_errors_are_its_own() -> None:
    assert not issubclass(p4switch.P4SwitchError, InnetError)


def test_a_program_p4switch_refuses_in_process_is_an_innet_input_error() -> None:
    with pytest.raises(P4SwitchRefusedError, match="LANES must be"):
        LocalSwitch(INNET_P4, {"SLOTS": "1", "LANES": "7"})


def test_a_refused_write_is_an_innet_error() -> None:
    switch = LocalSwitch(INNET_P4, {"SLOTS": "1"})
    bad = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    bad.entity.table_entry.table_id = 1  # no table of the program has this id
    with pytest.raises(P4SwitchFailedError, match="update 0 of 1 refused"):
        switch.write([bad])
