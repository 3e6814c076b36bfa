"""Costs of stages: the pricing protocol, the roofline, measured stage logs, XGBoost.

Modules:

* :mod:`.analytical`: The roofline cost model, so the scheduler runs with no device at all.
* :mod:`.hybrid`: Tuning policies: measure every candidate stage, or predict and measure only
  what can win.
* :mod:`.log`: The measurement log: append-only JSON lines that outlive the process.
* :mod:`.measured`: The measured cost model: stage latencies timed on the target, kept in a
  log.
* :mod:`.model_judge`: Judging concurrent stages in the whole model: keep what the model
  itself runs faster with.
* :mod:`.pricing`: The cost-model protocol, for cost models and their users, and pricing a
  whole schedule.
* :mod:`.reuse`: Stage figures that outlive a kernel database's growth: stages keyed by what
  they build.
* :mod:`.signature`: Stage signatures: a stage's identity read off the model's bindings,
  without building it.
* :mod:`.stage_attrs`: The module attributes that tell how a stage module is built (plain
  names, no imports).
* :mod:`.stage_judges`: Never slower than sequential: a concurrent stage is kept only if it
  measures faster.
* :mod:`.stage_module`: A stage of a schedule as a standalone Relax module, the thing a
  measured cost model times.
* :mod:`.stage_timing`: Build and time stage modules through TVM's meta_schedule builder and
  runners.
* :mod:`.xgb`: An XGBoost model of stage latency, learned from measurement logs.
"""
