"""The mutation run: does the suite catch the bugs that matter? (`make mutation`, `python -m bench.mutation`)

For each safety-critical target (bench/mutation/targets.py) every mutant cosmic-ray's operators make (plus our
string, membership and any/all operators, bench/mutation/operators.py) is written into a scratch copy of the
checkout, one at a time, and the target's focused unit tests run against it: a failing test kills it. The report
(build/mutation/report.json and report.md) gives killed / timeout / survived / equivalent / error per target, the
kill rate, and every survivor's diff; equivalent mutants are the ones docs/testing.md lists with a reason.

    nice -n 15 .venv/bin/python -m bench.mutation                  # every target (an hour or more on 2 cores)
    nice -n 15 .venv/bin/python -m bench.mutation budget           # one target
    nice -n 15 .venv/bin/python -m bench.mutation --list           # how many mutants, per operator
    nice -n 15 .venv/bin/python -m bench.mutation budget --resume  # re-run what the last run did not kill
    .venv/bin/python -m bench.mutation --report-only               # the report from the last results

Not part of `make test`: it runs the focused tests once per mutant. Exit 1 when the kill rate over the targets
in the report is below 90 % (`--min-rate`) or a named mutant of the spot check survives.
"""
