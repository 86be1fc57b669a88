"""analysis: quantities computed from finished runs: distances between runs (compare),
cluster and peak counts (clusters), measured transitions and fits of sweeps and plateaus of a
series (phase), the growth of the modes against linear theory (growth), the collapse of one
zonal cluster (zonal_collapse); the same as functions of a run's Dataset (dataset) and as its
accessor ``ds.mf`` (accessor).
May import every layer up to runs.
"""
