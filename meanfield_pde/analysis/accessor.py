"""The xarray accessor ``ds.mf``: the analysis of :mod:`meanfield_pde.analysis.dataset` as
methods of a run's Dataset::

    import xarray as xr
    import meanfield_pde                      # registers ds.mf
    ds = xr.open_dataset("run.nc")
    ds.mf.cluster_centres().n_clusters        # clusters over time
    ds.mf.fitted_growth_rates()               # σ_l fitted, with linear theory beside it

``import meanfield_pde`` registers it (:func:`install`) without importing xarray: importing
the package stays light (the command line's ``cases`` and ``--help`` load no numerics). If
xarray is already imported the accessor is registered at once, else when xarray is first
imported (an import hook that runs after xarray's own module, once). This module imports
only the standard library at its top; the analysis loads on the first call of a method.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import threading
import warnings

__all__ = ["ACCESSOR", "MeanFieldAccessor", "install", "register"]

ACCESSOR = "mf"
"""The accessor's name: ``ds.mf``."""

_lock = threading.Lock()
_registered = False


class MeanFieldAccessor:
    """``ds.mf``: the analysis functions of :mod:`meanfield_pde.analysis.dataset` with the
    Dataset ``ds`` as the run; each method takes the options of its function and returns
    its labelled Dataset.

    Raises (each method) :class:`~meanfield_pde.core.errors.NotARunError` when ``ds`` is not
    a run or lacks what the method reads, naming it.
    """

    def __init__(self, ds):
        self._ds = ds

    def cluster_centres(self, **options):
        """Clusters over time: n_clusters(time), centres, masses
        (:func:`meanfield_pde.analysis.dataset.cluster_centres`)."""
        from .dataset import cluster_centres
        return cluster_centres(self._ds, **options)

    def fitted_growth_rates(self, **options):
        """Growth rates fitted over the linear window, with their error bound and linear theory
        (:func:`meanfield_pde.analysis.dataset.fitted_growth_rates`)."""
        from .dataset import fitted_growth_rates
        return fitted_growth_rates(self._ds, **options)

    def merge_times(self, **options):
        """The merges of clusters (:func:`meanfield_pde.analysis.dataset.merge_times`)."""
        from .dataset import merge_times
        return merge_times(self._ds, **options)

    def plateau_times(self, **options):
        """The plateaus of the order parameter (:func:`meanfield_pde.analysis.dataset.plateau_times`)."""
        from .dataset import plateau_times
        return plateau_times(self._ds, **options)

    def distance(self, other, **options):
        """This run against ``other`` (a Dataset or path) at their common times
        (:func:`meanfield_pde.analysis.dataset.distance`)."""
        from .dataset import distance
        return distance(self._ds, other, **options)


def register() -> None:
    """Register :class:`MeanFieldAccessor` as ``xarray.Dataset.mf`` (once; imports xarray)."""
    global _registered
    with _lock:
        if _registered:
            return
        import xarray as xr
        xr.register_dataset_accessor(ACCESSOR)(MeanFieldAccessor)
        _registered = True


def _register_quietly() -> None:
    """register(), a failure a warning: it must never break the import of xarray."""
    try:
        register()
    except Exception as exc:  # noqa: BLE001 - reported, not raised, inside xarray's import
        warnings.warn(f"meanfield_pde: the xarray accessor ds.{ACCESSOR} was not registered: {exc}",
                      RuntimeWarning, stacklevel=2)


class _AfterXarray(importlib.abc.Loader):
    """xarray's own loader, then :func:`register`; puts the real loader back on the module."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        try:
            self.loader.exec_module(module)
        finally:
            module.__loader__ = self.loader
            if module.__spec__ is not None:
                module.__spec__.loader = self.loader
        _register_quietly()

    def __getattr__(self, name):  # get_resource_reader, is_package, ...: the real loader's
        if name == "loader":  # not set yet (a copy): no recursion
            raise AttributeError(name)
        return getattr(self.loader, name)


class _XarrayHook(importlib.abc.MetaPathFinder):
    """Finds ``xarray`` with the other finders and wraps its loader (:class:`_AfterXarray`)."""

    def __init__(self):
        self.searching = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "xarray" or self.searching or _registered:
            return None
        self.searching = True
        try:
            spec = importlib.util.find_spec(fullname)  # the other finders (this one is searching)
        finally:
            self.searching = False
        if spec is None or spec.loader is None:
            return None
        spec.loader = _AfterXarray(spec.loader)
        return spec


def install() -> None:
    """Register ``ds.mf`` now if xarray is imported, else when it is (idempotent)."""
    if _registered:
        return
    if "xarray" in sys.modules:
        _register_quietly()
        return
    if not any(isinstance(f, _XarrayHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _XarrayHook())
