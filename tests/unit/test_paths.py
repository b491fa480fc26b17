"""Where innet writes: folders made with their parents, refused before any work when they cannot
be."""

from __future__ import annotations

import pytest

from innet.exceptions import InputError
from innet.paths import check_destination, make_folder
from tests.unit.folders import unwritable


def test_a_folder_is_made_with_its_parents(tmp_path):
    folder = make_folder(tmp_path / "results" / "demo" / "run", "--out")
    assert folder.is_dir()
    assert make_folder(folder, "--out") == folder  # already there: fine


def test_checking_makes_nothing(tmp_path):
    check_destination(tmp_path / "a" / "b", "--out")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_inside_a_file_is_refused_naming_the_file(tmp_path):
    (tmp_path / "notes").write_text("x")
    with pytest.raises(InputError, match=r"--out .*notes/run/x: .*notes is a file, not a folder"):
        make_folder(tmp_path / "notes" / "run" / "x", "--out")
    assert (tmp_path / "notes").read_text() == "x"


def test_an_unwritable_folder_is_refused_and_nothing_is_made(tmp_path):
    with unwritable(tmp_path / "locked") as locked:
        with pytest.raises(InputError, match=r"--plot .*locked/deep: cannot write in .*locked"):
            make_folder(locked / "deep", "--plot")
        assert list(locked.iterdir()) == []
