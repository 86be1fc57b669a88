"""analysis: quantities computed from finished runs: distances between runs (compare),
cluster and peak counts (clusters), measured transitions and fits of sweeps (phase).
May import every layer up to runs.
"""
