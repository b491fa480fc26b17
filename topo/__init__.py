"""WAN model of innet: cities, links, shortest paths, multicast trees, and their data files."""

from topo.loader import TopologyError, default_wan, load_wan
from topo.synthetic import synthetic_wan
from topo.units import UnitError
from topo.wan import City, RttFit, RttFitRow, UnknownCityError, Wan, WanLink, great_circle_km

__all__ = [
    "City",
    "RttFit",
    "RttFitRow",
    "TopologyError",
    "UnitError",
    "UnknownCityError",
    "Wan",
    "WanLink",
    "default_wan",
    "great_circle_km",
    "load_wan",
    "synthetic_wan",
]
