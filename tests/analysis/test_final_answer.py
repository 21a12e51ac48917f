"""The math prompts' final-answer check: the last number written must equal the answer."""

import pytest

from core.analysis.expectations import Expectations, final_answer_is, last_number
from core.errors import ConfigError
from core.vocabulary import ExpectationKind
from examples import load_prompts


@pytest.mark.parametrize("text, value", [("17 x 23 = 391.", 391), ("\\boxed{1,024}", 1024), ("$0.80 back", 0.8),
                                         ("x = -5", -5), ("no number here", None), ("1, 2, 3", 3)])
def test_last_number(text, value):
    assert last_number(text) == value


def test_the_answer_must_be_the_last_number():
    assert final_answer_is("17 x 23 = 391", "391")
    assert not final_answer_is("391 is wrong, it is 392", "391")
    assert not final_answer_is("Step 1: 17 x 20 = 340", "391")  # stopped mid-way


def test_the_answer_is_one_more_expectation_checked_last():
    e = Expectations.from_dict({"must_appear": ["steps"], "answer": 55})
    checks = e.check("the steps give 55")
    assert len(e) == 2 and [c.met for c in checks] == [True, True]
    assert checks[-1].kind == ExpectationKind.FINAL_ANSWER.value and checks[-1].term == "55"


def test_a_final_answer_must_be_a_number():
    with pytest.raises(ConfigError, match="must be a number"):
        Expectations(answer="five")


def test_math_prompts_carry_answers_and_code_prompts_expectations():
    math, code = load_prompts("math"), load_prompts("code")
    assert sum(p.expectations is not None and p.expectations.answer is not None for p in math) >= 8
    assert len(code) >= 12 and all(p.expectations for p in code)
    assert code[0].text.startswith("Write a Python function that returns the n-th Fibonacci")  # code:0 stays put
