"""studies: runs of many cases and their summaries: parameter sweeps on dask.distributed
(sweep), PDE versus large-β limits (limit_sweep), PDE versus particles
(compare_particles), transformer normalisation and long-context studies
(transformer_study). May import every layer up to analysis; not plotting (its sibling).
"""
