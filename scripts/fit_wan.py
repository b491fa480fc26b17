"""Fit a WAN file's link delays to its measured RTT matrix, print them, optionally write them.

    python scripts/fit_wan.py topo/data/nine-cities.yaml            # print the fit
    python scripts/fit_wan.py topo/data/nine-cities.yaml --write    # and store the delays

The fit (topo.fit) minimises the largest relative error of the shortest-path round-trip times
against the file's `measured_rtt`, every delay at least its fibre lower bound. `--write` replaces
only the `delay:` values of the links, in place: comments, order and layout are kept.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

from topo.exceptions import FitError, TopologyError
from topo.fit import DelayFit, fibre_delay_s, fit_delays
from topo.loader import load_wan
from topo.wan import RttFitRow, Wan


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Fit a WAN file's link delays to its measured RTT matrix."
    )
    parser.add_argument("path", type=Path, help="WAN YAML file with measured_rtt")
    parser.add_argument("--write", action="store_true", help="store the fitted delays in the file")
    parser.add_argument("--resolution-ms", type=float, default=0.1, help="rounding of the delays")
    parser.add_argument("--worst", type=int, default=8, help="how many worst pairs to list")
    args = parser.parse_args(argv)
    try:
        wan = load_wan(args.path)
        fit = fit_delays(wan, resolution_s=args.resolution_ms / 1e3)
    except (OSError, TopologyError, FitError) as exc:
        print(f"fit_wan: {exc}", file=sys.stderr)
        return 2
    print(report(wan, fit, args.worst))
    if args.write:
        delays = {frozenset((link.a, link.b)): link.delay_s * 1e3 for link in fit.wan.links}
        text = args.path.read_text(encoding="utf-8")
        args.path.write_text(rewrite_delays(text, wan, delays), encoding="utf-8")
        load_wan(args.path)  # the rewritten file must still load
        print(f"wrote {len(delays)} delays to {args.path}")
    return 0


def report(before: Wan, fit: DelayFit, worst: int) -> str:
    """The fitted delays, the worst pairs and the floor the matrix itself imposes."""
    lines = [
        f"{before.name}: {len(before.links)} links, {len(before.measured_rtt_s)} measured pairs, "
        f"{fit.rounds} round(s) of path fixing",
        "",
        f"{'link':<28}{'fibre bound':>12}{'in file':>10}{'fitted':>10}",
    ]
    for old, new in zip(before.links, fit.wan.links, strict=True):
        ends = before.cities[before.index(old.a)], before.cities[before.index(old.b)]
        lines.append(
            f"{old.a + ' - ' + old.b:<28}{fibre_delay_s(*ends) * 1e3:>9.1f} ms"
            f"{old.delay_s * 1e3:>7.1f} ms{new.delay_s * 1e3:>7.1f} ms"
        )
    rtt = fit.wan.rtt_fit()
    lines += ["", f"worst pairs after the fit (before rounding: {fit.lp_worst:.2%})"]
    lines += [f"  {_row(row)}" for row in rtt.ranked()[:worst]]
    lines.append(f"worst relative RTT error in the file now: {_row(before.rtt_fit().worst)}")
    lines.append(f"worst relative RTT error after the fit:   {_row(rtt.worst)}")
    if fit.floor is not None:
        (a, c), b = fit.floor.far, fit.floor.via
        m = {pair: seconds * 1e3 for pair, seconds in before.measured_rtt_s.items()}
        lines.append(
            f"no metric does better than {fit.floor.rel_error:.2%} (triangle inequality): "
            f"{a}-{c} {m[frozenset((a, c))]:g} ms > {a}-{b} {m[frozenset((a, b))]:g} ms "
            f"+ {b}-{c} {m[frozenset((b, c))]:g} ms"
        )
    return "\n".join(lines)


def _row(row: RttFitRow) -> str:
    return (
        f"{row.a + '-' + row.b:<24} measured {row.measured_s * 1e3:6.1f} ms  "
        f"model {row.model_s * 1e3:6.1f} ms  error {row.rel_error:+7.2%}"
    )


def rewrite_delays(text: str, wan: Wan, delays_ms: Mapping[frozenset[str], float]) -> str:
    """`text` with the `delay:` value of every link in `delays_ms` replaced, all else kept.

    Links in the text may name cities by name or code; `wan` resolves them to names, the keys
    of `delays_ms`. Each value is replaced where it stands, so comments and layout survive.
    """
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(root, yaml.MappingNode):
        raise ValueError("a WAN file is a mapping with a links list")
    top = {key.value: value for key, value in root.value}
    edits: list[tuple[int, int, str]] = []
    for entry in top["links"].value:
        fields = {key.value: value for key, value in entry.value}
        pair = frozenset(wan.names[wan.index(fields[end].value)] for end in ("a", "b"))
        if pair in delays_ms:
            node = fields["delay"]
            edits.append((node.start_mark.index, node.end_mark.index, f"{delays_ms[pair]:.1f}ms"))
    for start, end, value in sorted(edits, reverse=True):
        text = text[:start] + value + text[end:]
    return text


if __name__ == "__main__":
    sys.exit(main())
