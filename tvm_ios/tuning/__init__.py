"""Tuned kernels: databases per CPU, the search, the cache, seeds and pruning.

Modules:

* :mod:`.cache`: Where a model's tuned kernels are found: the user's cache, then the seeds
  that ship.
* :mod:`.coverage`: A build meets a kernel its database lacks: say which, or tune it there
  (``cover``).
* :mod:`.cpu_compat`: Whether this CPU runs the kernels of a database tuned on another one.
* :mod:`.kernel_db`: Databases of TVM-tuned kernels: where they live, which CPU they fit, how
  a build uses them.
* :mod:`.prune`: Pruning a kernel database to the records its builds can use: each workload's
  few best.
* :mod:`.records`: A kernel database variant's files as builds read them: corrupt lines
  skipped, and the records that rank, by how they were timed.
* :mod:`.retime`: Timing a database's best candidates again, without a search.
* :mod:`.roofline`: How far the tuned kernels are from their own rooflines, from a kernel
  database's records.
* :mod:`.schedule_ceiling`: The most an inter-operator schedule can gain with a kernel
  database: a bound from its records.
* :mod:`.search`: Tuning the kernels a build really calls with TVM's own tuner
  (meta_schedule).
* :mod:`.tasks`: Which kernels a build calls, as meta_schedule tasks: one set per variant of a
  :class:`~.kernel_db.KernelDB` (:mod:`.search` tunes them).
"""
