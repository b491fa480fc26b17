"""The `torch.backends` entry point that makes `"innet"` a torch.distributed backend.

innet's package declares this module's `register` under torch's `torch.backends` entry points,
which torch calls when it is imported: a script then needs no import of innet's, only
`dist.init_process_group(backend="innet")`. It imports nothing heavy (torch is still being
imported when it runs); the process group itself (workers/distributed.py) is imported when a
group is made.
"""

from __future__ import annotations

from typing import Any

BACKEND = "innet"


def register() -> None:
    """Register the backend with torch.distributed (once; nothing where torch has no
    distributed package)."""
    import torch.distributed as dist

    if not dist.is_available() or BACKEND in dist.Backend.backend_list:
        return
    dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=["cpu"])


def _create(opts: Any, _options: Any) -> Any:
    from workers.distributed import process_group

    return process_group(opts)
