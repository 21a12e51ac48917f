"""The hybrid drafter: copy from the text when a confident copy exists, else ask the model."""

from tiny import tiny_bundle

from core import DecodeConfig, generate
from core.decoding.drafters import Draft, HybridDrafter, PromptLookupDrafter


class CountingModel:
    """A stand-in model drafter that records how often it was asked."""

    scorer = None

    def __init__(self) -> None:
        self.asked = 0

    def describe(self) -> str:
        return "stub"

    def propose(self, tokens: list[int], gamma: int) -> Draft:
        self.asked += 1
        return Draft(tokens=[99] * gamma, confidences=[0.9] * gamma, probs=[None] * gamma)


def test_a_confident_copy_is_used_and_the_model_is_not_asked():
    model = CountingModel()
    hybrid = HybridDrafter(PromptLookupDrafter(3), model)
    text = [1, 2, 3, 4, 5, 6, 1, 2, 3]  # "1 2 3" seen before, followed by 4 5 6
    draft = hybrid.propose(text, 3)
    assert draft.tokens == [4, 5, 6] and draft.is_copy and model.asked == 0


def test_no_confident_copy_asks_the_model():
    model = CountingModel()
    hybrid = HybridDrafter(PromptLookupDrafter(3), model)
    draft = hybrid.propose([1, 2, 3, 4, 5, 7], 3)  # 7 never seen: no copy at all
    assert draft.tokens == [99, 99, 99] and model.asked == 1
    weak = hybrid.propose([1, 2, 3, 9, 3], 4)  # only a one-token match ("3"), confidence 1/3 < 0.5
    assert weak.tokens == [99] * 4 and model.asked == 2


def test_hybrid_classic_sd_is_exact_and_uses_both_sources():
    bundle = tiny_bundle("llama", layers=4, drafter_layers=2, avoid_eos=True)
    prompt = "the cat sat on the mat. the cat sat on the mat. the cat"
    plain = generate(bundle, prompt, DecodeConfig(mode="plain", max_new_tokens=30, chat_template=False))
    trace = generate(bundle, prompt, DecodeConfig(mode="sd", drafter="hybrid", gamma=4, max_new_tokens=30,
                                                  chat_template=False))
    assert trace.token_ids == plain.token_ids
    assert "prompt lookup" in trace.models["drafter"] and "tiny-drafter" in trace.models["drafter"]
    roles = {c.role for r in trace.rounds for c in r.calls}
    assert "drafter" in roles  # the model drafted in some rounds
    assert any(r.draft_tokens and not any(c.role == "drafter" for c in r.calls) for r in trace.rounds)  # copies too
