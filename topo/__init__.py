"""WAN model of innet: cities, links, shortest paths, multicast trees, and their data files."""

from topo.exceptions import TopologyError, UnitError, UnknownCityError
from topo.loader import default_wan, load_wan
from topo.synthetic import synthetic_wan
from topo.wan import City, RttFit, RttFitRow, Wan, WanLink, great_circle_km

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
