"""WAN data files shipped with the package (a package so importlib.resources can find them)."""
