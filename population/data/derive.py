#!/usr/bin/env python3
"""Derive the simulator's compact world from the WonderProxy latency data set.

Input (not part of this repository; see population/data/README.md for where to get it):
    wonderproxy_servers.csv  id,name,country,continent,latitude,longitude
    wonderproxy_pings.csv    source,destination,avg_rtt_ms  (directed pairs)

Output (committed, embedded in the binary with include_str!):
    cities.csv   the selected cities, their UTC offset and relative player weight
    rtt.csv      full symmetric round-trip-time matrix between the selected cities,
                 one row per unordered pair, with where each value came from
    regions.csv  the datacenter regions and the city each one sits in

Usage:  python3 population/data/derive.py [SOURCE_DIR]   (default: ../shared/data next to the checkout)
Standard library only, deterministic: the same input always gives the same files.
"""

import csv
import math
import os
import sys

# The selection: WonderProxy city id -> (UTC offset in hours, standard time, and the
# relative number of players we expect from there). Weighted towards Europe and North
# America where most players of a game like Awesomenauts are, keeping the thin regions
# (Oceania, South America, Africa, the Middle East) that make round-based matchmaking hard.
# Weights are rough, made-up but plausible shares; only their ratios matter.
CITIES = {
    # Europe
    11: (0, 10),    # London
    77: (0, 4),     # Manchester
    187: (0, 2),    # Edinburgh
    19: (0, 3),     # Dublin
    4: (1, 8),      # Paris
    240: (1, 3),    # Lyon
    7: (1, 5),      # Amsterdam
    208: (1, 3),    # Brussels
    29: (1, 6),     # Frankfurt
    203: (1, 5),    # Hamburg
    210: (1, 5),    # Munich
    153: (1, 4),    # Dusseldorf
    35: (1, 3),     # Zurich
    20: (1, 3),     # Vienna
    3: (1, 3),      # Prague
    32: (1, 6),     # Warsaw
    26: (1, 3),     # Copenhagen
    10: (1, 4),     # Stockholm
    129: (1, 2),    # Oslo
    45: (2, 2),     # Helsinki
    94: (1, 5),     # Madrid
    17: (1, 3),     # Barcelona
    44: (0, 2),     # Lisbon
    27: (1, 4),     # Milan
    190: (1, 3),    # Rome
    47: (1, 2),     # Budapest
    67: (2, 3),     # Bucharest
    154: (2, 2),    # Sofia
    214: (2, 2),    # Athens
    34: (2, 3),     # Kiev
    9: (3, 6),      # Moscow
    149: (3, 3),    # St Petersburg
    66: (3, 4),     # Istanbul
    127: (2, 1),    # Riga
    # Middle East
    87: (2, 1),     # Tel Aviv
    133: (4, 1),    # Dubai
    116: (3, 1),    # Riyadh
    # North America
    13: (-5, 9),    # New York
    14: (-5, 3),    # Boston
    16: (-5, 4),    # Washington
    2: (-5, 4),     # Toronto
    52: (-5, 2),    # Montreal
    22: (-6, 6),    # Chicago
    18: (-5, 4),    # Atlanta
    15: (-5, 3),    # Miami
    12: (-6, 4),    # Dallas
    39: (-6, 3),    # Houston
    92: (-6, 2),    # Minneapolis
    55: (-6, 2),    # Kansas City
    71: (-7, 3),    # Denver
    38: (-7, 2),    # Phoenix
    37: (-8, 7),    # Los Angeles
    100: (-8, 4),   # San Francisco
    24: (-8, 3),    # Seattle
    53: (-8, 2),    # Vancouver
    33: (-6, 3),    # Mexico City
    151: (-10, 1),  # Honolulu
    # South America
    125: (-3, 4),   # Sao Paulo
    238: (-3, 1),   # Brasilia
    50: (-3, 2),    # Buenos Aires
    70: (-4, 1),    # Santiago
    213: (-5, 1),   # Bogota
    108: (-5, 1),   # Lima
    # Asia
    6: (9, 3),      # Tokyo
    119: (9, 1),    # Osaka
    113: (9, 2),    # Seoul
    72: (8, 1),     # Hong Kong
    95: (8, 1),     # Taipei
    31: (8, 2),     # Singapore
    64: (7, 1),     # Bangkok
    112: (8, 1),    # Manila
    57: (7, 1),     # Jakarta
    46: (5.5, 1),   # New Delhi
    222: (5.5, 1),  # Bangalore
    # Oceania
    107: (10, 3),   # Sydney
    1: (10, 2),     # Melbourne
    21: (10, 1),    # Brisbane
    169: (8, 1),    # Perth
    8: (12, 1),     # Auckland
    # Africa
    175: (2, 1),    # Johannesburg
    42: (2, 1),     # Cape Town
    62: (2, 1),     # Cairo
    243: (1, 1),    # Lagos
    131: (3, 1),    # Nairobi
}

# Datacenter regions (names in the style of the big cloud providers) -> the city whose
# measurements stand in for the datacenter.
REGIONS = [
    ("eu-west", 11, "London"),
    ("eu-central", 29, "Frankfurt"),
    ("us-east", 16, "Washington"),
    ("us-central", 12, "Dallas"),
    ("us-west", 100, "San Francisco"),
    ("sa-east", 125, "Sao Paulo"),
    ("ap-northeast", 6, "Tokyo"),
    ("ap-southeast", 31, "Singapore"),
    ("au-east", 107, "Sydney"),
    ("af-south", 175, "Johannesburg"),
]


def great_circle_km(a, b):
    """Haversine distance on a sphere of radius 6371 km."""
    lat1, lon1 = map(math.radians, a)
    lat2, lon2 = map(math.radians, b)
    h = (math.sin((lat2 - lat1) / 2) ** 2
         + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2)
    return 2 * 6371.0 * math.asin(math.sqrt(h))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    source = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "..", "shared", "data")
    if not os.path.exists(os.path.join(source, "wonderproxy_servers.csv")):
        sys.exit(f"no wonderproxy_servers.csv in {source}; usage: python3 population/data/derive.py SOURCE_DIR")

    servers = {}
    with open(os.path.join(source, "wonderproxy_servers.csv"), newline="") as f:
        for row in csv.DictReader(f):
            servers[int(row["id"])] = row
    directed = {}
    with open(os.path.join(source, "wonderproxy_pings.csv"), newline="") as f:
        for row in csv.DictReader(f):
            directed[(int(row["source"]), int(row["destination"]))] = float(row["avg_rtt_ms"])

    ids = sorted(CITIES)
    missing = [i for i in ids if i not in servers]
    if missing:
        sys.exit(f"cities not in the server list: {missing}")
    for _, city, _ in REGIONS:
        if city not in CITIES:
            sys.exit(f"region city {city} is not among the selected cities")
    pos = {i: (float(servers[i]["latitude"]), float(servers[i]["longitude"])) for i in ids}

    # Fit rtt = A + B * distance on every measured pair among the selected cities, to
    # estimate the pairs measured in neither direction.
    xs, ys = [], []
    for i in ids:
        for j in ids:
            if i < j and ((i, j) in directed or (j, i) in directed):
                vals = [directed[p] for p in ((i, j), (j, i)) if p in directed]
                xs.append(great_circle_km(pos[i], pos[j]))
                ys.append(sum(vals) / len(vals))
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    a = my - b * mx

    counts = {"measured": 0, "reverse": 0, "estimate": 0}
    pairs = []
    for i in ids:
        for j in ids:
            if i >= j:
                continue
            fwd, rev = directed.get((i, j)), directed.get((j, i))
            if fwd is not None and rev is not None:
                rtt, how = (fwd + rev) / 2, "measured"
            elif fwd is not None or rev is not None:
                rtt, how = (fwd if fwd is not None else rev), "reverse"
            else:
                rtt, how = a + b * great_circle_km(pos[i], pos[j]), "estimate"
            counts[how] += 1
            pairs.append((i, j, round(rtt, 1), how))

    with open(os.path.join(here, "cities.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "name", "country", "continent", "latitude", "longitude",
                    "utc_offset_hours", "player_weight"])
        for i in ids:
            s = servers[i]
            off, weight = CITIES[i]
            w.writerow([i, s["name"], s["country"], s["continent"], s["latitude"],
                        s["longitude"], off, weight])
    with open(os.path.join(here, "rtt.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["a", "b", "rtt_ms", "source"])
        w.writerows(pairs)
    with open(os.path.join(here, "regions.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["region", "city_id", "city"])
        w.writerows(REGIONS)

    print(f"{len(ids)} cities, {len(pairs)} pairs: {counts}; "
          f"estimate fit rtt_ms = {a:.2f} + {b * 1000:.2f} * distance_km / 1000 "
          f"on {n} measured pairs")


if __name__ == "__main__":
    main()
