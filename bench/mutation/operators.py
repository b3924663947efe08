"""The mutation operators of the run: a curated subset of cosmic-ray's core operators plus three of our own.

cosmic-ray's core set replaces every comparison and binary operator with every other one (7 to 11 mutants per
site), which mostly adds mutants any test kills and costs a test run each. We keep the ones that model a
plausible slip: an off-by-one boundary (`<` ↔ `<=`), a flipped equality, a negated or dropped condition, a
swapped arithmetic operator, a constant ±1, `True` ↔ `False`, `and` ↔ `or`, a loop that never runs, a removed
decorator, an exception handler that no longer matches.

cosmic-ray has no operator for string literals, `in` / `not in`, or `any` / `all`; in this program the values
that matter most are strings (file modes, flags, iptables rules, CIDRs), so we add them through cosmic-ray's
operator-provider interface (`cosmic_ray.plugins.OPERATOR_PROVIDERS`, registered in this process by
`register()` instead of an entry point, so the shared virtualenv's editable install stays untouched):

- `hub/StringLiteral`: `"0600"` → `"XX0600XX"` (mutmut's string mutation), on plain and f-string parts;
  never on docstrings (a string that is a whole statement);
- `hub/InNotIn`: `a in b` ↔ `a not in b`;
- `hub/AnyAll`: `any(...)` ↔ `all(...)`;
- `hub/ExceptionReplacer`: core's ExceptionReplacer (`except E` → an exception nothing raises), also for dotted
  names (`except ssl.SSLError`), where core's raises AttributeError.
"""

from __future__ import annotations

from collections.abc import Iterator

import parso.python.tree as pytree
from cosmic_ray import plugins
from cosmic_ray.exceptions import CosmicRayTestingException
from cosmic_ray.operators.operator import Example, Operator

PROVIDER = "hub"

_COMPARISONS = ("Eq_NotEq", "NotEq_Eq", "Lt_LtE", "LtE_Lt", "Gt_GtE", "GtE_Gt", "Is_IsNot", "IsNot_Is")
_BINARY = ("Add_Sub", "Sub_Add", "Mul_Div", "Div_Mul", "FloorDiv_Div", "Mod_FloorDiv", "Pow_Mul", "BitOr_BitAnd",
           "BitAnd_BitOr", "LShift_RShift", "RShift_LShift")

CORE_OPERATORS: tuple[str, ...] = (
    *(f"core/ReplaceComparisonOperator_{pair}" for pair in _COMPARISONS),
    *(f"core/ReplaceBinaryOperator_{pair}" for pair in _BINARY),
    "core/ReplaceUnaryOperator_Delete_Not",
    "core/ReplaceUnaryOperator_Delete_USub",
    "core/AddNot",
    "core/ReplaceTrueWithFalse",
    "core/ReplaceFalseWithTrue",
    "core/ReplaceAndWithOr",
    "core/ReplaceOrWithAnd",
    "core/ReplaceBreakWithContinue",
    "core/ReplaceContinueWithBreak",
    "core/NumberReplacer",
    "core/ZeroIterationForLoop",
    "core/RemoveDecorator",
)


def _is_statement_string(node: pytree.BaseNode | pytree.Leaf) -> bool:
    """A string literal that is a whole expression statement: a docstring (module, class, function, attribute)."""
    top = node
    while top.parent is not None and top.parent.type in ("strings", "fstring"):
        top = top.parent
    parent = top.parent
    return parent is not None and parent.type == "simple_stmt" and parent.children[0] is top


class StringLiteral(Operator):
    """`"value"` → `"XXvalueXX"`; an f-string's literal parts one by one."""

    def mutation_positions(self, node):  # type: ignore[no-untyped-def]
        if node.type in ("string", "fstring_string") and not _is_statement_string(node):
            yield node.start_pos, node.end_pos

    def mutate(self, node, index):  # type: ignore[no-untyped-def]
        assert index == 0
        if node.type == "fstring_string":
            node.value = "XX" + node.value + "XX"
            return node
        value: str = node.value
        quote_at = min(i for i in (value.find('"'), value.find("'")) if i != -1)
        prefix, body = value[:quote_at], value[quote_at:]
        quote = body[:3] if body[:3] in ('"""', "'''") else body[0]
        node.value = prefix + quote + "XX" + body[len(quote):-len(quote)] + "XX" + quote
        return node

    @classmethod
    def examples(cls):  # type: ignore[no-untyped-def]
        return (Example('x = "0600"', 'x = "XX0600XX"'), Example("x = f'a{b}'", "x = f'XXaXX{b}'"))


class InNotIn(Operator):
    """`a in b` ↔ `a not in b` (a membership test, never the `in` of a loop)."""

    def mutation_positions(self, node):  # type: ignore[no-untyped-def]
        if node.type == "comparison":
            for op in node.children[1::2]:
                if op.get_code().split() in (["in"], ["not", "in"]):
                    yield op.start_pos, op.end_pos

    def mutate(self, node, index):  # type: ignore[no-untyped-def]
        ops = [i for i, op in enumerate(node.children) if i % 2 == 1
               and op.get_code().split() in (["in"], ["not", "in"])]
        i = ops[index]
        negated = node.children[i].get_code().split() == ["not", "in"]
        node.children[i] = pytree.Keyword("in" if negated else "not in", node.children[i].start_pos, prefix=" ")
        return node

    @classmethod
    def examples(cls):  # type: ignore[no-untyped-def]
        return (Example("x in y", "x not in y"), Example("x not in y", "x in y"))


class AnyAll(Operator):
    """`any(...)` ↔ `all(...)`."""

    def mutation_positions(self, node):  # type: ignore[no-untyped-def]
        if node.type == "name" and node.value in ("any", "all") and _called(node):
            yield node.start_pos, node.end_pos

    def mutate(self, node, index):  # type: ignore[no-untyped-def]
        assert index == 0
        node.value = "all" if node.value == "any" else "any"
        return node

    @classmethod
    def examples(cls):  # type: ignore[no-untyped-def]
        return (Example("any(x)", "all(x)"), Example("all(x)", "any(x)"))


class ExceptionReplacer(Operator):
    """`except (A, mod.B)` → `except (CosmicRayTestingException, mod.B)` and so on: the handler stops matching."""

    def mutation_positions(self, node):  # type: ignore[no-untyped-def]
        if node.type == "except_clause":
            for target in _exception_names(node):
                yield target.start_pos, target.end_pos

    def mutate(self, node, index):  # type: ignore[no-untyped-def]
        target = _exception_names(node)[index]
        prefix = target.get_first_leaf().prefix
        replacement = pytree.Name(CosmicRayTestingException.__name__, target.start_pos, prefix=prefix)
        parent = target.parent
        parent.children[parent.children.index(target)] = replacement
        replacement.parent = parent
        return node

    @classmethod
    def examples(cls):  # type: ignore[no-untyped-def]
        name = CosmicRayTestingException.__name__
        return (Example("try: pass\nexcept ssl.SSLError: pass", f"try: pass\nexcept {name}: pass"),
                Example("try: pass\nexcept (A, b.C) as e: pass", f"try: pass\nexcept (A, {name}) as e: pass",
                        occurrence=1))


def _exception_names(clause):  # type: ignore[no-untyped-def]
    """The exception expressions an except clause lists (`except E`, `except (A, b.C) as e`)."""
    if len(clause.children) < 2:
        return []
    spec = clause.children[1]
    if spec.type == "atom" and spec.children[0].value == "(":
        inner = spec.children[1]
        return list(inner.children[::2]) if inner.type == "testlist_comp" else [inner]
    return [spec]


def _called(name: pytree.Leaf) -> bool:
    sibling = name.get_next_sibling()
    return (name.parent is not None and name.parent.type == "atom_expr" and name.parent.children[0] is name
            and sibling is not None and sibling.type == "trailer" and sibling.children[0].value == "(")


_OWN = {cls.__name__: cls for cls in (StringLiteral, InNotIn, AnyAll, ExceptionReplacer)}


class HubProvider:
    """cosmic-ray operator provider for the operators above."""

    def __iter__(self) -> Iterator[str]:
        return iter(_OWN)

    def __getitem__(self, name: str) -> type[Operator]:
        return _OWN[name]


OWN_OPERATORS: tuple[str, ...] = tuple(f"{PROVIDER}/{name}" for name in _OWN)
ALL_OPERATORS: tuple[str, ...] = CORE_OPERATORS + OWN_OPERATORS


def register() -> None:
    """Make `hub/...` resolvable by cosmic-ray (`plugins.get_operator`) in this process."""
    plugins.OPERATOR_PROVIDERS.setdefault(PROVIDER, HubProvider())


def get(name: str) -> Operator:
    register()
    return plugins.get_operator(name)()
