"""plotting: figures (matplotlib Figure objects, written with runs.outputs.save_png) of runs
(plot), comparisons (plot_compare), phase diagrams (phase) and transformer studies
(transformer_plot). May import every layer up to analysis; not studies (its sibling).
"""
