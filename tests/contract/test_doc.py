"""docs/upstream-contract.md is the contract data rendered (hubctl/contract_doc.py): one source for the doc and
the checks. It must be current, cover every contract, and give every fact a source."""

from __future__ import annotations

import re

from components.operations.contract import all_contracts
from hubctl import contract_doc


def test_the_doc_is_rendered_from_the_current_data() -> None:
    assert contract_doc.DOC.read_text() == contract_doc.render(), (
        "docs/upstream-contract.md is stale: run .venv/bin/python -m hubctl.contract_doc --write")


def test_every_rendered_container_has_a_section_and_every_row_a_source() -> None:
    text = contract_doc.render()
    for contract in all_contracts():
        assert f"### {contract.title}\n" in text, contract.key
    section = text[text.index("## Per container"):text.index("## Objects the program owns")]
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith(("| flag |", "| listener |", "| to |", "| from |",
                                                          "| API |", "| what |", "| variable |")):
            assert re.search(r"@[^|]+ `[^`]+`", line), line  # repo@ref `path`
        if line.startswith("- "):
            assert re.search(r"\(.+@.+ `[^`]+`.*\)$", line), line


def test_a_stale_doc_is_noticed(tmp_path, monkeypatch) -> None:
    stale = tmp_path / "upstream-contract.md"
    stale.write_text(contract_doc.render().replace("karmada-webhook", "karmada-webhok", 1))
    monkeypatch.setattr(contract_doc, "DOC", stale)
    assert stale.read_text() != contract_doc.render()
    contract_doc.main(["--write"])
    assert stale.read_text() == contract_doc.render()
