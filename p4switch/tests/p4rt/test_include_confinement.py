"""The include scan that guards pushed programs, on its own: every spelling of a directive that
cpp would obey is checked, and nothing outside the allowed roots is opened."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.exceptions import P4CompileError
from p4switch.frontend.includes import scan_includes


def scan(tmp_path: Path, text: str) -> dict[str, str]:
    root = tmp_path / "prog"
    root.mkdir(exist_ok=True)
    main = root / "main.p4"
    main.write_text(text)
    return scan_includes(main, [root], [])


@pytest.mark.parametrize(
    "text",
    [
        '#include "/etc/hostname"',
        "  #  include   </etc/hostname>",
        '#inc\\\nlude "/etc/hostname"',  # a line continuation inside the directive
        '/* a comment\n spanning lines */ #include "/etc/hostname"',
        '%:include "/etc/hostname"',  # digraph
        '??=include "/etc/hostname"',  # trigraph
        '#if 0\n#include "/etc/hostname"\n#endif',  # conditionals are not evaluated
    ],
)
def test_every_spelling_of_an_absolute_include_is_refused(tmp_path: Path, text: str) -> None:
    with pytest.raises(P4CompileError, match="absolute paths are refused"):
        scan(tmp_path, text + "\n")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('#include "a/../../x.p4"', "'..' is refused"),
        ("#include HEADER", "computed includes"),
        ('#if __has_include("x.p4")\n#endif', "__has_include"),
        ('_Pragma("GCC dependency \\"x.p4\\"")', "_Pragma"),
        ('#pragma GCC dependency "x.p4"', "dependency"),
        ('#include ""', "empty"),
        ('#include_next "x.p4"', "include_next"),
    ],
)
def test_what_cannot_be_checked_is_refused(tmp_path: Path, text: str, why: str) -> None:
    with pytest.raises(P4CompileError, match=why):
        scan(tmp_path, text + "\n")


def test_an_include_in_a_comment_or_string_is_not_a_directive(tmp_path: Path) -> None:
    text = '// #include "/etc/hostname"\n/* #include "/etc/hostname" */\nx = "#include";\n'
    assert list(scan(tmp_path, text)) == [str(tmp_path / "prog" / "main.p4")]


def test_includes_are_followed_and_found_as_cpp_finds_them(tmp_path: Path) -> None:
    root = tmp_path / "prog"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.p4").write_text('#include "b.p4"\n')  # beside a.p4 first
    (root / "sub" / "b.p4").write_text("#include <c.p4>\n")  # <>: the search directories only
    (root / "c.p4").write_text("")
    main = root / "main.p4"
    main.write_text('#include "sub/a.p4"\n#include "missing.p4"\n')
    texts = scan_includes(main, [root], [root])
    assert sorted(Path(p).name for p in texts) == ["a.p4", "b.p4", "c.p4", "main.p4"]


def test_the_error_names_the_directive_and_where_it_is(tmp_path: Path) -> None:
    root = tmp_path / "prog"
    root.mkdir()
    (root / "a.p4").write_text("\n\n#include </etc/hostname>\n")
    main = root / "main.p4"
    main.write_text('#include "a.p4"\n')
    with pytest.raises(P4CompileError) as caught:
        scan_includes(main, [root], [])
    assert str(caught.value).startswith(f'{root / "a.p4"}:3:1: error: #include "/etc/hostname"')
