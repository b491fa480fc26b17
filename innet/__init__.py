"""innet's shared root: the error every innet package's exceptions descend from."""

from innet.exceptions import InnetError, InputError

__all__ = ["InnetError", "InputError"]
