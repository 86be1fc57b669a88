"""analysis: quantities computed from finished runs: distances between runs (compare),
cluster and peak counts (clusters), measured transitions and fits of sweeps (phase), the
collapse of one zonal cluster (zonal_collapse).
May import every layer up to runs.
"""
