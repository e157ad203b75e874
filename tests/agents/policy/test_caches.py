import pytest
import torch

from agents.policy.caches import RolloutCaches


class _OneLayerCache:
    def __init__(self, keys):
        self.layers = [type("Layer", (), {"keys": keys, "values": -keys})()]


def test_prompt_kv_is_kept_only_inside_the_block_and_the_switch_is_restored_after_an_error():
    caches = RolloutCaches(trunk_layer=None)
    cache = _OneLayerCache(torch.ones(1, 1, 2, 1))
    caches.keep_prompt_kv([[1, 2]], cache, width=2)
    assert len(caches.prompts) == 0
    with pytest.raises(KeyError), caches.keeping_prompt_caches():
        caches.keep_prompt_kv([[1, 2]], cache, width=2)
        raise KeyError("the rollout failed")
    assert len(caches.prompts) == 1 and not caches.keeps_prompts
    with caches.keeping_prompt_caches(), caches.keeping_prompt_caches(enabled=False):
        assert not caches.keeps_prompts  # an inner block can switch it off for its span
    caches.prompts.clear()


def test_trunk_states_need_a_frozen_trunk_and_are_recorded_only_inside_the_block(tiny_model_path):
    with pytest.raises(ValueError, match="lora.top_layers"), RolloutCaches(trunk_layer=None).keeping_trunk_hiddens():
        pass
    with RolloutCaches(trunk_layer=None).keeping_trunk_hiddens(enabled=False):
        pass  # switching it off needs no trunk
    from agents.policy.weights import PolicyWeights

    model = PolicyWeights.load(tiny_model_path).model
    caches = RolloutCaches(trunk_layer=1)
    assert caches.trunk_recorder(model) is None
    with caches.keeping_trunk_hiddens():
        recorder = caches.trunk_recorder(model)
    assert recorder is not None and recorder.layer is model.get_decoder().layers[1]
