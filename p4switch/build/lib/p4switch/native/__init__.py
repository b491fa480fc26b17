"""The native back end: the program compiled to C, built with gcc, run through ctypes.

`build(program)` generates the C of a checked `ir.Program` (`cmodule`, with `cexprs`, `cstmts`,
`cparser` and `cbits`, mirroring `p4switch.compiler`), builds it once into a cached shared
library (`toolchain`) and loads it; `NativePipeline` runs packets through it with the behaviour of
the python back end's `Pipeline`, its tables and replication engine kept in step with the
`SwitchState` (`sync`). `p4s_process` of `abi.h` is the entry a native I/O loop calls.

A program the generator cannot write in C raises `NativeUnsupported` (saying what and where), a
failed build `NativeBuildError` (of which `NativeUnsupported` is a kind: catch it to fall back
to the python back end); `available()` says beforehand whether a compiler is there:

    >>> available() is None or available().startswith("no C compiler")
    True
"""

from p4switch.exceptions import NativeBuildError, NativeUnsupported
from p4switch.native.pipeline import NativeModule, NativePipeline, build
from p4switch.native.toolchain import available

__all__ = [
    "NativeBuildError",
    "NativeModule",
    "NativePipeline",
    "NativeUnsupported",
    "available",
    "build",
]
