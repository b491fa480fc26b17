"""P4Info files named as p4c names them now (`.txtpb`, protobuf text format), as innet's `make p4`
writes and compares them; `.txt` still means text and `.bin` binary."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.cli import main as p4switch_main
from p4switch.p4info import read_p4info, write_p4info
from p4switch.p4info_diff import load
from p4switch.p4info_diff import main as diff_main
from p4switch.program import compile_file

PROGRAM = Path(__file__).resolve().parent / "p4rt" / "fixtures" / "simple.p4"


def test_p4info_out_txtpb_writes_text_that_the_diff_loader_reads_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "simple.p4switch.p4info.txtpb"
    argv = ["--p4", str(PROGRAM), "-D", "UNUSED=1", "--check", "--p4info-out", str(out)]
    assert p4switch_main(argv) == 0
    text = out.read_text()  # text format: it decodes, and names the program's tables
    assert 'name: "MyIngress.l2"' in text
    assert load(out) == compile_file(PROGRAM, defines={"UNUSED": "1"}).p4info
    assert diff_main([str(out), str(out)]) == 0
    assert "P4Info agree" in capsys.readouterr().out


@pytest.mark.parametrize(("suffix", "text"), [(".txtpb", True), (".txt", True), (".bin", False)])
def test_each_suffix_keeps_its_format(tmp_path: Path, suffix: str, text: bool) -> None:
    info = compile_file(PROGRAM).p4info
    path = tmp_path / f"simple.p4info{suffix}"
    write_p4info(info, path)
    assert read_p4info(path) == info
    if text:
        assert load(path) == info
    else:
        assert path.read_bytes() == info.SerializeToString()
