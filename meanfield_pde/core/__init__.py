"""core: the foundations every other layer stands on: errors and warnings, thread
caps, interrupt handling (signals), the manifolds behind one spectral interface
(geometry/: Sphere with shtns, Circle with the FFT) and the Funk–Hecke multipliers of
the attention kernel (kernels). Imports nothing from the rest of the package.
"""
