"""Speed benchmarks, one module per paper (:mod:`.racodp`, :mod:`.dpfermi`, :mod:`.byoa`) plus
the generic :mod:`.kernels` and :mod:`.workflow` ones; run them with ``dpminimax bench``. A
paper's numbers (datasets, batch sizes, repeats, grids, targets) are its ``benchmarks:`` block in
``papers/<paper>/experiments.yaml``. Nothing in the library imports this package.
"""
