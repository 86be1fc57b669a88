"""A sphinx-gallery image scraper for the package's figures.

The plotting functions of meanfield_pde return a :class:`matplotlib.figure.Figure` made
without pyplot (no global state: they are called from worker processes and the command
line, for some of them), which sphinx-gallery's matplotlib scraper, reading
``pyplot.get_fignums()``, never sees. This scraper saves every such Figure an example's code
block has bound to a name (once, after the block that made it) and returns its reST; the
figures made through pyplot are left to the matplotlib scraper.
"""

from __future__ import annotations

from pathlib import PurePosixPath

_saved: dict[str, set[int]] = {}  # example file -> ids of the figures already saved


def scraper(block, block_vars, gallery_conf, **kwargs):
    from matplotlib.figure import Figure
    from sphinx_gallery.scrapers import figure_rst

    seen = _saved.setdefault(str(block_vars["src_file"]), set())
    # a figure made through pyplot has a manager: sphinx-gallery's matplotlib scraper saves it
    figures = [v for v in block_vars["example_globals"].values()
               if isinstance(v, Figure) and id(v) not in seen
               and getattr(v.canvas, "manager", None) is None]
    paths = []
    for fig, path in zip(figures, block_vars["image_path_iterator"]):
        path = PurePosixPath(path)
        fig.savefig(path, dpi=80)
        seen.add(id(fig))
        paths.append(path)
    return figure_rst(paths, gallery_conf["src_dir"])
