"""cli: the ``meanfield-pde`` command (commands), the top layer: it may import every other
layer; nothing imports it except the package's ``__main__``.
"""

from .commands import main

__all__ = ["main"]
