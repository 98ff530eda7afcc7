"""The `model` string grammar of SPEC §5."""

import pytest

from switchboard.catalog.selectors import parse_selector, selector_from_spec
from switchboard.errors import BadRequest


@pytest.mark.parametrize(
    ("text", "kind", "fields"),
    [
        ("default", "default", {}),
        ("tag:fast", "tagged", {"tag": "fast"}),
        ("openai/gpt-4o-mini", "exact", {"provider": "openai", "model": "gpt-4o-mini"}),
        (
            "gemini/models/gemini-2.0-flash",
            "exact",
            {"provider": "gemini", "model": "models/gemini-2.0-flash"},
        ),
        ("agent:researcher", "agent", {"agent_id": "researcher"}),
        ("fast", "alias", {"alias": "fast"}),
        ("meta-llama/Llama-3", "alias", {"alias": "meta-llama/Llama-3"}),
    ],
)
def test_each_selector_form_parses_to_its_kind(text: str, kind: str, fields: dict[str, str]) -> None:
    selector = parse_selector(text)
    assert selector.kind == kind
    assert selector.text == text
    for name, value in fields.items():
        assert getattr(selector, name) == value


@pytest.mark.parametrize("bad", ["", "   ", None, 42, ["gpt"], "tag:", "agent:", "x" * 257])
def test_a_missing_or_malformed_model_is_a_bad_request(bad: object) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_selector(bad)
    assert caught.value.param == "model"


def test_agent_spec_selectors_map_to_the_string_grammar() -> None:
    assert selector_from_spec(None).kind == "default"
    assert selector_from_spec({"kind": "tagged", "tag": "fast"}).text == "tag:fast"
    assert selector_from_spec({"kind": "exact", "provider": "openai", "model": "m"}).text == "openai/m"
    assert selector_from_spec({"kind": "alias", "alias": "fast"}).text == "fast"
    with pytest.raises(BadRequest):
        selector_from_spec({"kind": "tagged"})
