"""The app driven by Streamlit's own AppTest."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def started(sampler="ais", budget=30):
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    at.selectbox(key="sampler").set_value(sampler)
    at.number_input(key="budget").set_value(budget)
    at.button(key="start").click().run()
    assert not at.exception
    return at


def test_start_page_explains_what_to_do():
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert "press **Start**" in at.info[0].value


def test_labelling_updates_the_estimate_and_undo_goes_back():
    at = started()
    assert at.metric[0].value == "0 / 30"
    for _ in range(3):
        at.button(key="label_1").click().run()
    assert not at.exception
    assert at.metric[0].value == "3 / 30"
    at.button(key="auto").click().run()
    assert at.metric[0].value == "13 / 30"
    estimate = at.metric[1].value
    assert estimate != "not yet defined"
    at.button(key="undo").click().run()
    assert at.metric[0].value == "12 / 30"


def test_item_content_is_shown_as_text():
    at = started("bernoulli")
    texts = [t.value for t in at.text]
    assert any(t.startswith("left: ") for t in texts)
    assert any(t.startswith("right: ") for t in texts)


def test_an_undefined_estimate_shows_its_reason_instead_of_a_number():
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.selectbox(key="sample").set_value("Needle in a haystack (1 positive in 5,000)").run()
    at.selectbox(key="measure").set_value("precision").run()
    at.selectbox(key="sampler").set_value("passive").run()
    at.button(key="start").click().run()
    assert not at.exception
    assert at.metric[1].value == "not yet defined"
    assert "no predicted positive labelled yet" in [c.value for c in at.caption]
