"""ptwalk verdict layer: compare result sets, render reports, check budgets.

Each step runs alone and offline on saved result JSONs (schema
ptwalk.result/1, see results/SCHEMA.md):

  result_types  the typed result: dataclasses and enums, parsed once,
           a bad document is one ResultError naming the member
  results  load and group result documents by scenario key
  stats    Welch's t-test, Mann-Whitney U, bootstrap CI (stdlib only)
  hist     merge and query ptwalk's log-linear latency histograms
  compare  A vs B per scenario and metric -> verdict (scripts/ptwalk-compare)
  fit      least-squares walk cost model and its prediction interval
  report   Markdown + PNG report, mailing-list text (scripts/ptwalk-report)
  budgets  PASS/FAIL of results against results/budgets/*.json
  matrix   the qualification scenario matrix and results layout
"""

SCHEMA = "ptwalk.result/1"
