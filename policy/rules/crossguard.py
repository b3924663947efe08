"""The CrossGuard adapter: the registry as pulumi_policy policies, with the analyzer's secrets redacted."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .props import _SECRET_SIG, _SIG_KEY, COMPUTED, SECRET, is_unknown
from .registry import RESOURCE_RULES, STACK_RULES, ResourceRule, StackRule


def redact_wire_secrets(value: Any) -> Any:
    """Replace every wire-format secret (`{sig: secret, value: …}`) by "[secret]", as plan.json does."""
    if isinstance(value, Mapping):
        if value.get(_SIG_KEY) == _SECRET_SIG:
            return SECRET
        return {k: redact_wire_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_wire_secrets(v) for v in value]
    return value


def install_secret_redaction() -> None:
    """Make the analyzer show secrets as "[secret]" instead of their plaintext.

    The engine sends secrets wrapped (`MarshalOptions{KeepSecrets: true}`), but pulumi_policy's Analyze and
    AnalyzeStack unwrap them with `deserialize_properties(..., proxy_secrets=False)` and drop the marker, so
    the secret rule could not tell `Output.secret(key)` from a pasted key. We wrap the module-level function
    `pulumi_policy.policy` calls (pinned in requirements.txt); Remediate (proxy_secrets=True) is untouched.
    """
    import pulumi_policy.policy as analyzer

    original = analyzer.deserialize_properties
    if getattr(original, "redacts_secrets", False):
        return

    def deserialize(props: dict[str, Any], proxy_secrets: bool = False) -> dict[str, Any]:
        return original(props if proxy_secrets else redact_wire_secrets(props), proxy_secrets)

    deserialize.redacts_secrets = True  # type: ignore[attr-defined]
    analyzer.deserialize_properties = deserialize


def plain(value: Any) -> Any:
    """pulumi_policy's unknown-checking proxies -> plain dicts/lists, unknowns -> "[computed]".

    Rules walk whole objects; through the proxy the first unknown value would abort the rule for the
    resource ("can't run policy during preview") instead of just being skipped.
    """
    from pulumi_policy import proxy

    if isinstance(value, proxy._DictProxy | proxy._ListProxy):
        value = value["__target"]
    if isinstance(value, Mapping):
        return {k: plain(value[k]) for k in value}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [plain(v) for v in value]
    if is_unknown(value):
        return COMPUTED
    return value


def crossguard_policies() -> list[Any]:
    """The registry as pulumi_policy policies, mandatory except the advisory ones that only name what a stack
    opted in to (built here so tests need no PolicyPack server)."""
    from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

    def resource_validate(rule: ResourceRule) -> Callable[[Any, Any], None]:
        def validate(args: Any, report_violation: Any) -> None:
            for message in rule.check(args.resource_type, plain(args.props)):
                report_violation(message)

        return validate

    def stack_validate(rule: StackRule) -> Callable[[Any, Any], None]:
        def validate(args: Any, report_violation: Any) -> None:
            resources = [(r.resource_type, plain(r.props), r.urn) for r in args.resources]
            for message, urn in rule.check(resources):
                report_violation(message, urn)

        return validate

    policies: list[Any] = [
        ResourceValidationPolicy(name=r.name, description=r.description, validate=resource_validate(r),
                                 enforcement_level=EnforcementLevel.MANDATORY)
        for r in RESOURCE_RULES
    ]
    policies += [
        StackValidationPolicy(name=r.name, description=r.description, validate=stack_validate(r),
                              enforcement_level=EnforcementLevel.ADVISORY if r.advisory
                              else EnforcementLevel.MANDATORY)
        for r in STACK_RULES
    ]
    return policies
