"""The API's JSON views of a testbed: what each endpoint returns, built from the testbed's data."""

from __future__ import annotations

import dataclasses

from controller.planner.optimise import Plan
from controller.testbed import EdgeCounters, HistoryEntry, InstalledRound, SwitchHealth, Testbed
from innet.jsontypes import JSONObject, JSONValue


def health(switches: tuple[SwitchHealth, ...]) -> JSONObject:
    """`ok`, the `reason` when not (each unwell switch's, by name), and every switch's fields:
    process, p4runtime, control, primary (ok | lost), state (ok | diverged), write (ok |
    timed out), ok, reason."""
    unwell = [f"{s.city} ({s.switch}): {s.reason or 'not ok'}" for s in switches if not s.ok]
    return {
        "ok": not unwell,
        "reason": "; ".join(unwell),
        "switches": [{**_fields(s), "ok": s.ok} for s in switches],
    }


def topology(testbed: Testbed, cluster: JSONObject | None = None) -> JSONObject:
    """Cities, links, switches and how the network was built (slot pool, shaping, scale); on a
    cluster, its machines as measured and each city's (`cluster`, as a run's cluster.json),
    else null."""
    wan, pool = testbed.wan, testbed.pool
    facts = testbed.network.facts()
    return {
        "name": wan.name,
        "cities": [{"index": i, "name": c.name, "code": c.code} for i, c in enumerate(wan.cities)],
        "links": [
            {"a": k.a, "b": k.b, "delay_s": k.delay_s, "capacity_bps": k.capacity_bps}
            for k in wan.links
        ],
        "hosts_per_city": testbed.network.hosts_per_city,
        "slots": pool.slots_per_bank,
        "memory_bytes": pool.memory_bytes,
        "switches": [
            {
                "city": wan.names[s.city],
                "name": s.name,
                "grpc_addr": s.grpc_addr,
                "device_id": s.device_id,
            }
            for s in testbed.network.sites
        ],
        "target": facts.target,
        "shaping": facts.shaping,
        "scale": facts.scale,
        "workdir": facts.workdir,
        "engines": list(facts.engines),
        "cluster": cluster,
    }


def schedule(testbed: Testbed) -> JSONObject:
    """The schedule rounds are played from, by city names, and the planner's parameters."""
    sched, params = testbed.schedule, testbed.params
    return {
        "family": sched.family,
        "rounds": [_groups(testbed.names_of(r)) for r in sched.rounds],
        "cycle_start": testbed.cycle_start,
        "params": {
            "memory_bytes": params.memory_bytes,
            "update_bytes": params.update_bytes,
            "bandwidth_bps": params.access_bps,
        },
    }


def plan(testbed: Testbed, result: Plan) -> JSONObject:
    """The schedule the plan chose, with every family's figures."""
    return {
        **schedule(testbed),
        "plan": [
            {
                "family": f.family,
                "time_s": f.time_s,
                "rounds": f.rounds,
                "exact": f.exact,
                "memory_bytes": f.memory_bytes,
            }
            for f in result.families
        ],
    }


def installed(rnd: InstalledRound | None) -> JSONObject | None:
    if rnd is None:
        return None
    out: JSONObject = {
        "number": rnd.number,
        "groups": _groups(rnd.groups),
        "installed": list(rnd.installed),
    }
    if rnd.install_s is not None:
        out["install_s"] = rnd.install_s
    return out


def history(entries: tuple[HistoryEntry, ...]) -> list[JSONValue]:
    return [{**_fields(e), "groups": _groups(e.groups)} for e in entries]


def counters(edge: EdgeCounters) -> JSONObject:
    ports: JSONValue = None
    if edge.ports is not None:
        ports = {str(port): values.to_json() for port, values in sorted(edge.ports.items())}
    return {"city": edge.city, "switch": edge.switch, "stats": dict(edge.stats), "ports": ports}


def _groups(groups: tuple[tuple[str, ...], ...]) -> list[JSONValue]:
    return [list(g) for g in groups]


def _fields(obj: SwitchHealth | HistoryEntry) -> JSONObject:
    out: JSONObject = {}
    for f in dataclasses.fields(obj):
        out[f.name] = getattr(obj, f.name)
    return out
