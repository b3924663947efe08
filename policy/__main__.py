"""The CrossGuard policy pack: `pulumi preview|up --policy-pack policy` runs the hub's invariants, all mandatory.

The engine runs this file with the pack directory on sys.path, hence the top-level `import rules`. Building
the PolicyPack starts the analyzer's gRPC server and blocks forever, so nothing may import this module:
tests and `hubctl.policy_check` use `policy.rules` directly.
"""

import rules
from pulumi_policy import EnforcementLevel, PolicyPack

# Before the pack starts serving: otherwise the analyzer hands rules the plaintext of secret inputs.
rules.install_secret_redaction()

PolicyPack(
    name="karmada-hub",
    description="HA and safety invariants of the Karmada hub (etcd quorum, control-plane HA, firewall, DNS TTL, "
    "failover, pinned images, no plaintext secrets).",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=rules.crossguard_policies(),
)
