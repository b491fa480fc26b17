"""WAN files the tests share.

`TRIANGLE`: three made-up cities, the slow side A-C longer than the detour, so that A's tree to
C and the ring's hop between them are the direct link (70 ms against 75 ms through B).
"""

TRIANGLE = """\
name: three
sources:
  test: a made-up triangle for the tests, not a measurement
cities:
  - {name: Aa, code: AAA, continent: X, lat: 0.0, lon: 0.0, source: test}
  - {name: Bb, code: BBB, continent: X, lat: 0.0, lon: 10.0, source: test}
  - {name: Cc, code: CCC, continent: X, lat: 0.0, lon: 20.0, source: test}
links:
  - {a: AAA, b: BBB, delay: 40ms, capacity: 100Gbps, source: test}
  - {a: BBB, b: CCC, delay: 35ms, capacity: 100Gbps, source: test}
  - {a: AAA, b: CCC, delay: 70ms, capacity: 100Gbps, source: test}
"""
