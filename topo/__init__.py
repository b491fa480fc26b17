"""innet's topology: the WAN model and the emulated network built from it.

wan.py, loader.py, synthetic.py, fit.py, data/   cities, links, shortest paths, multicast
                    trees; WAN files and the fit of their delays
yamlfile.py         the YAML files innet reads, within size and depth limits, and their values
                    by type, each error at file:line (topologies, scenarios, schedules, cases)
siteplan.py         the emulation's facts every side shares: slot pool, addresses, ports
mininet_net.py      the emulated network (NetworkSpec -> TestbedNet); mininet_hosts.py its
                    hosts, p4node.py and bmv2.py its switches, shaping.py its link shaping
"""

from topo.exceptions import TopologyError, UnknownCityError
from topo.loader import default_wan, load_wan
from topo.synthetic import synthetic_wan
from topo.wan import City, RttFit, RttFitRow, Wan, WanLink, great_circle_km

__all__ = [
    "City",
    "RttFit",
    "RttFitRow",
    "TopologyError",
    "UnknownCityError",
    "Wan",
    "WanLink",
    "default_wan",
    "great_circle_km",
    "load_wan",
    "synthetic_wan",
]
