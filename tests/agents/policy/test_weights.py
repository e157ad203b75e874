import pytest
import torch

from agents.policy.weights import LoraOptions, PolicyWeights, WeightSettings, torch_dtype


@pytest.mark.parametrize(
    ("options", "message"),
    [({"rank": 0}, "lora.rank"), ({"top_layers": 0}, "lora.top_layers"), ({"dropout": 1.0}, "lora.dropout")],
)
def test_bad_lora_options_are_named(options, message):
    with pytest.raises(ValueError, match=message):
        LoraOptions(**options)


def test_dtype_names():
    assert torch_dtype("float16") is torch.float16
    for bad in ("Tensor", "nn", "no_such_dtype"):
        with pytest.raises(ValueError, match="must name a torch dtype"):
            torch_dtype(bad)


def test_the_reference_is_the_adapter_switched_off_or_a_frozen_copy_or_none(tiny_model_path):
    plain = PolicyWeights.load(tiny_model_path)
    assert not plain.has_reference and plain.trunk_layer is None
    copied = PolicyWeights.load(tiny_model_path, WeightSettings(reference=True))
    with copied.reference_model() as reference:
        assert reference is not copied.model and not any(p.requires_grad for p in reference.parameters())
    adapted = PolicyWeights.load(tiny_model_path, WeightSettings(lora=LoraOptions(rank=2, top_layers=1)))
    assert adapted.has_reference and adapted.trunk_layer == 1
    assert {name.split(".layers.")[1][0] for name in adapted.trainable_state_dict()} == {"1"}
    with adapted.reference_model() as reference:
        assert reference is adapted.model
    state = adapted.trainable_state_dict()
    adapted.load_trainable_state_dict({name: torch.ones_like(t) for name, t in state.items()})
    assert all(bool((t == 1).all()) for t in adapted.trainable_state_dict().values())
    with pytest.raises(KeyError, match="unexpected"):
        adapted.load_trainable_state_dict({**state, "extra": torch.zeros(1)})
