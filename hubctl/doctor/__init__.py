"""`hubctl doctor`: the 3 a.m. question — is it the hub, a member, a policy, a quota or version skew? — answered
from the live fleet, read-only.

`checks.py` (pure: what was read and what the stack declares -> rows with verdicts and runbooks), `read.py` (the
thin reader: the stack's kubeconfigs, as `hubctl drill` takes them), `cli.py` (arguments, table or JSON, exit code).
"""
