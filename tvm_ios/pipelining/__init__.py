"""CNN pipelines on heterogeneous execution places (seed paper 003: Pipe-search, Shisha).

EPs (:mod:`.eps`), layer times (:mod:`.layer_times`), the configuration space
(:mod:`.space`), schedulers (:mod:`.shisha`, :mod:`.pipesearch`, :mod:`.baselines`), the
shared evaluator (:mod:`.search`), real stages and the executor (:mod:`.stages`,
:mod:`.executor`), a driver (:mod:`.run`) and the convergence plot (:mod:`.plot`).
"""

__all__ = ["eps", "layer_times", "space", "search", "shisha", "pipesearch", "baselines",
           "stages", "executor", "run", "plot"]
