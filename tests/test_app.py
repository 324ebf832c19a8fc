"""The app driven by Streamlit's own AppTest: every page, bad uploads, labelling, resume."""

import json
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from streamlit.testing.v1 import AppTest

import evalcore as ec

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")


def keyed(at, prefix):
    """The one button whose key starts with ``prefix`` (the label page's keys name the
    answer count and the item)."""
    (button,) = [button for button in at.button if (button.key or "").startswith(prefix)]
    return button


def answer_button(at, code):
    """The answer button of class ``code``."""
    return keyed(at, f"label_{code}_")


def undo_button(at):
    return keyed(at, "undo_")


@pytest.fixture(autouse=True)
def patient_pages(monkeypatch):
    """Pages wait for their replays here, so a loaded machine does not change what a test
    sees; the test of the progressive Convergence page sets its own wait."""
    from views import common

    monkeypatch.setattr(common, "TRACE_WAIT", 60.0)


def app():
    """The app before its first run. Run it before ``switch_page``: with the navigation drawn by
    the app (``position="hidden"``), AppTest switches only after the app registered its pages,
    as a browser tab does."""
    return AppTest.from_file(APP, default_timeout=60)


def errors(at):
    return " ".join(e.value for e in at.error)


def opened_sample(name="products.csv"):
    at = app().run()
    assert not at.exception
    at.button(key=f"sample_{name}").click().run()
    assert not at.exception
    return at


def started(sampler="ais", budget=30, sample="products.csv", measure=None):
    at = opened_sample(sample)
    if measure:
        at.selectbox(key="setup_measure").set_value(measure).run()
    at.selectbox(key="setup_sampler").set_value(sampler).run()
    at.number_input(key="setup_budget").set_value(budget)
    at.button(key="start").click().run()
    assert not at.exception, at.exception
    return at


def progress(at):
    return at.get("progress")[0].proto.text


def test_opening_a_sample_leads_to_the_set_up_page_with_defaults():
    at = opened_sample()
    assert at.selectbox(key="setup_sampler").value == "ais"
    assert at.selectbox(key="setup_measure").value == "f1"
    assert "Product record pairs" in " ".join(c.value for c in at.caption)
    captions = " ".join(c.value for c in at.caption)
    assert "probabilities (the probability column, or expit(score)) item by item" in captions
    at.selectbox(key="setup_sampler").set_value("stratified").run()
    assert "Uses the scores only" in " ".join(c.value for c in at.caption)


def test_labelling_updates_the_estimate_and_undo_goes_back(database):
    at = started()
    assert progress(at) == "0 of 30 labels"
    assert at.query_params["session"]
    for _ in range(3):
        answer_button(at, 1).click().run()
    assert not at.exception
    assert progress(at) == "3 of 30 labels"
    at.button(key="auto").click().run()
    assert progress(at) == "13 of 30 labels"
    assert at.metric[0].value != "not yet defined"
    undo_button(at).click().run()
    assert progress(at) == "12 of 30 labels"
    # every answer is in the database, in order
    store = ec.Store(database)
    (record,) = store.sessions()
    assert record.n_answers == 12 and record.sampler == "ais" and record.budget == 30


def test_a_new_app_process_resumes_with_the_same_progress_and_estimate():
    at = started(budget=40)
    at.button(key="auto").click().run()
    session_id = at.query_params["session"]
    estimate, caption = at.metric[0].value, at.caption[-1].value
    fresh = app().run()
    fresh.query_params["session"] = session_id
    fresh.switch_page("views/label_page.py").run()
    assert not fresh.exception
    assert progress(fresh) == "10 of 40 labels"
    assert fresh.metric[0].value == estimate
    assert caption in [c.value for c in fresh.caption]


def test_item_content_is_shown_as_text_and_the_model_is_hidden_by_default():
    at = started("bernoulli")
    texts = [t.value for t in at.text]
    assert any(t.startswith("left: ") for t in texts)
    assert any(t.startswith("right: ") for t in texts)
    assert not any(c.value.startswith("Model: score") for c in at.caption)
    at.toggle(key="show_model").set_value(True).run()
    assert any(c.value.startswith("Model: score") for c in at.caption)


def test_label_buttons_say_what_0_and_1_mean_and_have_digit_shortcuts():
    at = started()
    assert answer_button(at, 0).label == "Negative (0)"
    assert answer_button(at, 1).label == "Positive (1)"
    assert [answer_button(at, c).proto.shortcut for c in (0, 1)] == ["1", "2"]
    assert undo_button(at).proto.shortcut == "u"


def test_an_undefined_estimate_shows_its_reason_instead_of_a_number():
    at = started("passive", sample="needle.csv.gz", measure="precision")
    assert at.metric[0].value == "not yet defined"
    notes = [c.value for c in at.caption if "may lie anywhere in" in c.value]
    assert notes and notes[0].startswith("Nothing labelled yet; with this pool the Precision")


def test_no_positive_found_yet_is_said_in_words_not_as_a_zero_width_interval():
    at = started("passive", sample="needle.csv.gz", measure="f1")
    for _ in range(10):
        answer_button(at, 0).click().run()
    captions = [c.value.replace("\\", "") for c in at.caption]  # shown as text: escaped
    assert not any("interval: 0.000 to 0.000" in c for c in captions)
    assert any(c.startswith("No positive") and "may lie anywhere in [" in c for c in captions)


def test_the_label_page_says_when_the_interval_reaches_to_the_models_estimate():
    """Ten answers at a time (products pool, AIS): the note is shown exactly when the
    session's interval takes its lower limit from the model's, which happens within 80."""
    at, shown = labelled_session(budget=100, clicks=0), []
    for _ in range(8):
        at.button(key="auto").click().run()
        session = at.session_state["open_session"][1]
        from_model = session.estimate().limits_from_model(0.95)[0][0]
        notes = [c for c in at.caption if c.value.startswith("The interval reaches down to what")]
        assert bool(notes) == from_model, [c.value for c in at.caption]
        shown += notes
    assert shown
    assert "the F1 score at 0" in shown[0].help.replace("\\", "")


def test_uploaded_class_names_on_the_label_page_are_shown_as_text():
    # 120 items: fewer than the papers' 256 leaves, so the set-up page offers a shallower tree
    classes = ["**bold**", "b", "c"]
    rows = "".join(f"{i},{i % 3 - 1},{i % 2},{(i + 1) % 3},{classes[i % 3]}\n" for i in range(120))
    at = upload(("item_id,score_**bold**,score_b,score_c,label\n" + rows).encode())
    at.button(key="use_upload").click().run()
    at.selectbox(key="setup_measure").set_value("per_class_recall").run()
    at.button(key="start").click().run()
    assert not at.exception, at.exception
    assert at.metric[0].label == "Estimated Recall of class \\*\\*bold\\*\\*"


def test_a_multiclass_pool_gets_one_button_per_class():
    at = started("ais", sample="sentiment3.csv", measure="macro_f1")
    answer_button(at, 2).click().run()
    assert not at.exception
    assert progress(at) == "1 of 30 labels"


def test_saved_sessions_are_listed_resumed_and_deleted():
    at = started(budget=20)
    answer_button(at, 0).click().run()
    session_id = at.query_params["session"]
    start = app().run()
    assert "1 / 20 labels" in start.markdown[1].value or any(
        "1 / 20 labels" in m.value for m in start.markdown
    )
    start.button(key=f"resume_{session_id}").click().run()
    assert not start.exception
    assert progress(start) == "1 of 20 labels"
    start = app().run()
    start.button(key=f"delete_{session_id}").click().run()
    start.button(key=f"confirm_{session_id}").click().run()
    assert not start.exception
    assert not any(b.key == f"resume_{session_id}" for b in start.button)


def test_set_up_and_label_pages_explain_what_is_missing():
    at = app().run()
    at.switch_page("views/setup_page.py").run()
    assert not at.exception
    assert "start page" in at.info[0].value
    at = app().run()
    at.switch_page("views/label_page.py").run()
    assert "Start a session" in at.info[0].value
    at = app().run()
    at.query_params["session"] = "no-such-session"
    at.switch_page("views/label_page.py").run()
    assert not at.exception
    assert "no saved session" in errors(at)


def upload(content: bytes, name="pool.csv"):
    at = app().run()
    at.file_uploader(key="upload").upload(name, content).run()
    assert not at.exception, at.exception
    return at


# bad uploads: the hostile corpus in test_uploads.py


def test_the_offending_rows_are_shown():
    at = upload(b"item_id,score,label\n1,0.5,1\n2,,0\n3,nan,0\n4,-1,0\n")
    assert "rows 1, 2" in errors(at)
    assert at.dataframe[0].value.shape[0] == 2


def test_a_good_upload_is_previewed_and_used():
    content = (ROOT / "sample_data" / "products.csv").read_bytes()
    at = upload(content, "my-pairs.csv")
    frame = pd.read_csv(ROOT / "sample_data" / "products.csv")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Items"] == "2,000"
    predicted = int((frame["score"] >= 0).sum())  # scores are logits; no pred column
    assert metrics["Predicted positive"] == f"{predicted:,} ({predicted / 2000:.2%})"
    assert metrics["Expected positives"] == f"{expit(frame['score']).sum():,.1f}"
    at.button(key="use_upload").click().run()
    assert not at.exception
    assert "Pool: **my\\-pairs**, 2,000 items" in " ".join(c.value for c in at.caption)


def test_a_pool_of_rounded_probabilities_is_labelled_to_the_end_without_hanging():
    """Regression: with probabilities rounded to 0.00 for a third of the items, the label
    page hung once the items above 0 were labelled (the proposal's mass on the rest fell
    below 1e-12 and labelled items were drawn again one at a time)."""
    rng = np.random.default_rng(5)
    label = (rng.random(300) < 0.05).astype(int)
    score = rng.normal(3.0 * label - 1.5)
    prob = np.round(expit(2.5 * score), 2)
    assert (prob == 0).sum() > 50
    frame = pd.DataFrame({"item_id": np.arange(300), "score": score, "prob": prob})
    frame["label"] = label
    at = upload(frame.to_csv(index=False).encode(), "rounded.csv")
    at.button(key="use_upload").click().run()
    at.number_input(key="setup_budget").set_value(300)
    at.button(key="start").click().run()
    at.number_input(key="auto_count").set_value(300).run()
    at.button(key="auto").click().run()
    assert not at.exception, at.exception
    assert progress(at).startswith("300 of 300")


def labelled_session(budget=40, clicks=2, **options):
    at = started(budget=budget, **options)
    for _ in range(clicks):
        at.button(key="auto").click().run()
    assert not at.exception
    return at


def test_a_precision_session_says_it_is_exact_once_the_predicted_positives_are_labelled():
    # regression: the next item was searched for forever once no unlabelled item could
    # change the precision (products.csv predicts 106 positives)
    at = started("ais", budget=300, measure="precision")
    at.number_input(key="auto_count").set_value(150).run()
    at.button(key="auto").click().run()
    assert not at.exception, at.exception
    assert progress(at).startswith("106 of 300")
    assert "every item whose answer can change it is labelled" in " ".join(
        s.value for s in at.success
    )
    keys = [button.key or "" for button in at.button]
    assert not any(key.startswith("label_") for key in keys) and "auto" not in keys


def test_the_convergence_page_plots_the_session():
    at = labelled_session()
    at.switch_page("views/convergence_page.py").run()
    assert not at.exception, at.exception
    charts = at.get("plotly_chart")
    assert len(charts) == 4  # estimate, KL, weights, ESS
    assert float(at.metric[0].value) > 1


def test_the_convergence_page_lets_the_user_pick_a_component_of_a_vector_measure():
    at = labelled_session(measure="pr_curve")
    at.switch_page("views/convergence_page.py").run()
    assert not at.exception, at.exception
    at.selectbox(key="component").set_value("recall@50").run()
    assert not at.exception


def test_the_pr_explorer_reads_out_the_curve_at_the_threshold():
    at = labelled_session()
    at.switch_page("views/pr_explorer_page.py").run()
    assert not at.exception, at.exception
    assert "not at the curve" in " ".join(c.value for c in at.caption)
    before = [m.value for m in at.metric]
    at.select_slider(key="threshold").set_value(10).run()
    assert not at.exception
    assert [m.value for m in at.metric] != before
    assert "Lowest threshold" in " ".join(m.value for m in at.markdown)


def test_the_pr_slider_readout_and_marker_agree_after_the_number_of_thresholds_changes():
    """Regression: after "Thresholds on the curve" changed (100 -> 110), the slider showed one
    threshold while the readout and the red marker used another."""
    at = labelled_session()
    at.switch_page("views/pr_explorer_page.py").run()
    at.select_slider(key="threshold").set_value(30).run()
    chosen = float(shown_threshold(at))
    for n_thresholds in (110, 200, 20):
        at.slider(key="n_thresholds").set_value(n_thresholds).run()
        assert not at.exception, at.exception
        slider = shown_threshold(at)
        assert at.metric[0].label == f"Precision at {slider}"
        marker = at.get("plotly_chart")[0].proto.spec
        assert f"threshold {slider}" in marker
        grid = [float(option) for option in at.select_slider(key="threshold").options]
        assert float(slider) == min(grid, key=lambda t: abs(t - chosen))  # nearest on the grid


def shown_threshold(at) -> str:
    slider = at.select_slider(key="threshold")
    return slider.options[slider.value]


def run_comparison(at, samplers, budget, repeats):
    """On the Compare page: simulate ``samplers`` to ``budget`` labels, ``repeats`` times."""
    at.multiselect(key="compare_samplers").set_value(samplers)
    at.number_input(key="compare_budget").set_value(budget)
    at.number_input(key="compare_repeats").set_value(repeats)
    at.button(key="run_compare").click().run()
    assert not at.exception, at.exception


def test_the_compare_page_runs_simulations_and_keeps_the_results():
    at = opened_sample()
    at.switch_page("views/compare_page.py").run()
    assert not at.exception, at.exception
    run_comparison(at, ["is", "passive"], 30, 3)
    assert len(at.get("plotly_chart")) == 2  # MSE and KL
    assert at.button(key="run_compare").disabled  # cached: nothing left to run
    at.switch_page("views/start_page.py").run()
    at.switch_page("views/compare_page.py").run()
    assert len(at.get("plotly_chart")) == 2


def test_a_sampler_whose_estimate_is_never_defined_is_named_not_dropped():
    """Regression: passive sampling on the needle pool vanished from the chart and table."""
    at = opened_sample("needle.csv.gz")
    at.switch_page("views/compare_page.py").run()
    run_comparison(at, ["passive", "is"], 20, 2)
    messages = " ".join(info.value for info in at.info)
    assert "Passive (uniform random): the estimate was undefined in every run" in messages


def test_the_all_measures_page_lists_every_binary_measure():
    at = labelled_session()
    at.switch_page("views/measures_page.py").run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert {"F1 score", "Precision", "Recall", "Accuracy"} <= set(table.measure)


def test_the_all_measures_page_gives_an_f_beta_session_its_own_measure_as_labelled():
    """Regression: an F-beta session's measure was missing from the table, and the table's
    estimate of a session's own measure differed from the label page's."""
    at = labelled_session(measure="fbeta")  # beta 2, the set-up page's default
    shown = at.metric[0].value
    at.switch_page("views/measures_page.py").run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    (row,) = table[table.measure == "F-beta score (beta = 2)"].itertuples()
    assert row.note == "the session's target"
    assert f"{row.estimate:.3f}" == shown


def test_the_all_measures_page_names_classes_and_measures_in_words():
    at = labelled_session(sample="sentiment3.csv", measure="macro_f1")
    at.switch_page("views/measures_page.py").run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert "component" not in table.columns
    names = set(table.measure)
    assert {"Macro-averaged F1", "Micro-averaged F1", "Accuracy"} <= names
    assert {f"Recall of class {c}" for c in ("negative", "neutral", "positive")} <= names
    assert not any("[" in name for name in names)


def test_the_export_page_offers_the_log_report_and_figures():
    at = labelled_session()
    shown = at.metric[0].value
    at.switch_page("views/export_page.py").run()
    assert not at.exception, at.exception
    report = at.dataframe[1].value  # the report's fields, one column per component
    assert list(report.columns) == ["F1 score"]
    assert f"{float(report.loc['estimate', 'F1 score']):.3f}" == shown
    assert report.loc["labels_used", "F1 score"] == "20"
    keys = {button.key for button in at.get("download_button")}
    assert {"log_csv", "log_parquet", "report_json", "report_csv", "figure_estimate"} <= keys


def test_insight_pages_without_a_session_point_to_the_start_page():
    for page in ("convergence_page", "pr_explorer_page", "measures_page", "export_page"):
        at = app().run()
        at.switch_page(f"views/{page}.py").run()
        assert not at.exception
        assert "Open a session first" in at.info[0].value


def second_window(session_id):
    other = app().run()
    other.query_params["session"] = session_id
    other.switch_page("views/label_page.py").run()
    assert not other.exception, other.exception
    return other


def test_a_press_on_an_answered_items_button_that_arrives_late_changes_nothing(database):
    """Regression: the answer and undo buttons kept one key for every item, so a press made
    on the page as it was before an answer, reaching the server after the run that showed
    the next item (a double click on a fast server, with the page's guard out of play), ran
    the callback with the next item's arguments: it answered an item never seen, or undid
    a second answer. A press on a widget of the page as it was is replayed here from
    AppTest's element tree of that page."""
    at = started("ais", budget=30)
    session_id = at.query_params["session"]
    shown_first = answer_button(at, 1)
    shown_first.click().run()
    saved = ec.Store(database).answers(session_id)
    assert len(saved) == 1
    shown_first.click().run()  # the same page's button again, after the next item's run
    assert not at.exception, at.exception
    assert ec.Store(database).answers(session_id) == saved
    assert progress(at) == "1 of 30 labels"
    answer_button(at, 0).click().run()  # the item shown now is answered
    answer_button(at, 1).click().run()
    saved = ec.Store(database).answers(session_id)
    assert len(saved) == 3
    shown_three = undo_button(at)
    shown_three.click().run()
    assert ec.Store(database).answers(session_id) == saved[:2]
    shown_three.click().run()  # the same undo again: the second answer stays
    assert ec.Store(database).answers(session_id) == saved[:2]
    assert progress(at) == "2 of 30 labels"


def test_a_stale_window_can_neither_undo_nor_answer_over_another_windows_answer(database):
    first = started("ais", budget=30)
    answer_button(first, 0).click().run()
    session_id = first.query_params["session"]
    second = second_window(session_id)  # shows the second item, after answer 1
    answer_button(first, 1).click().run()  # the first window answers it
    saved = ec.Store(database).answers(session_id)
    undo_button(second).click().run()  # stale: must not delete the first window's answer
    assert ec.Store(database).answers(session_id) == saved
    assert "Another tab or window changed this session" in errors(second)
    answer_button(second, 0).click().run()  # now in step again: this answer is saved
    assert len(ec.Store(database).answers(session_id)) == 3
    stale = answer_button(first, 1)  # the first window still shows the old item
    stale.click().run()
    assert len(ec.Store(database).answers(session_id)) == 3
    assert "Another tab or window changed this session" in errors(first)
    # whatever happened, the saved log replays
    pool, _ = ec.Store(database).load_pool(ec.Store(database).session_record(session_id).pool_key)
    ec.Store(database).load_session(session_id, pool)


def test_a_window_shows_another_windows_changed_answer_even_at_the_same_count(database):
    """Regression: a window kept its session while the saved log had as many answers as it
    had, so after another window undid an answer and gave another, it showed its own
    estimate and item until a press (which the store then refused)."""
    first = started("ais", budget=30)
    for label in (1, 1, 0, 1):
        answer_button(first, label).click().run()
    session_id = first.query_params["session"]
    second = second_window(session_id)
    before = second.metric[0].value
    undo_button(first).click().run()
    answer_button(first, 0).click().run()  # the same count, another answer
    assert first.metric[0].value != before
    second.run()  # any rerun of the second window, such as a widget's
    assert not second.exception
    assert second.metric[0].value == first.metric[0].value
    assert progress(second) == "4 of 30 labels"


def test_a_log_that_fails_to_replay_is_explained_and_can_be_cut_back(database):
    at = started("ais", budget=30)
    for _ in range(3):
        answer_button(at, 0).click().run()
    session_id = at.query_params["session"]
    import sqlite3

    with sqlite3.connect(database) as db:  # a corrupt log: answer 2 names answer 1's item
        db.execute(
            "UPDATE answers SET item = (SELECT item FROM answers WHERE session_id = ? AND "
            "position = 0) WHERE session_id = ? AND position = 1",
            (session_id, session_id),
        )
    window = second_window(session_id)
    assert "cannot be replayed" in errors(window) and "answer 2 of 3" in errors(window)
    window.button(key="repair_keep").click().run()
    assert not window.exception
    assert len(ec.Store(database).answers(session_id)) == 1
    assert progress(second_window(session_id)) == "1 of 30 labels"


def test_a_log_labelled_on_another_machine_opens_whole_and_says_so(database):
    """Regression: a log whose proposals this machine rounds otherwise (another processor's
    arithmetic) offered to delete every answer from the first item drawn otherwise."""
    at = started("ais", budget=30)
    for _ in range(3):
        answer_button(at, 0).click().run()
    session_id = at.query_params["session"]
    record = ec.Store(database).session_record(session_id)
    pool, _ = ec.Store(database).load_pool(record.pool_key)
    logged = {item for item, _ in ec.Store(database).answers(session_id)}
    elsewhere = next(item for item in np.flatnonzero(pool.y_pred == 1) if int(item) not in logged)
    import sqlite3

    with sqlite3.connect(database) as db:  # answer 2 for an item this machine did not draw
        db.execute(
            "UPDATE answers SET item = ? WHERE session_id = ? AND position = 1",
            (int(elsewhere), session_id),
        )
    window = second_window(session_id)
    assert not window.exception and not errors(window)
    assert any("from answer 2 on" in info.value for info in window.info)
    assert progress(window) == "3 of 30 labels"
    assert len(ec.Store(database).answers(session_id)) == 3


def test_the_app_is_open_without_secrets():
    at = app().run()
    assert not at.exception
    assert not any(t.key == "access_password" for t in at.text_input)
    assert any(b.key.startswith("sample_") for b in at.button)


def test_a_shared_password_from_secrets_guards_the_app():
    at = app()
    at.secrets["access"] = {"password": "correct horse"}
    at.run()
    assert not at.exception
    assert not any(b.key.startswith("sample_") for b in at.button)
    at.text_input(key="access_password").input("wrong")
    at.button[0].click().run()
    assert "not right" in errors(at)
    assert not any(b.key.startswith("sample_") for b in at.button)
    at.text_input(key="access_password").input("correct horse")
    at.button[0].click().run()
    assert not at.exception
    assert not any(t.key == "access_password" for t in at.text_input)
    at.switch_page("views/start_page.py").run()
    assert any(b.key.startswith("sample_") for b in at.button)


def test_an_oidc_login_is_asked_for_when_auth_is_configured():
    at = app()
    at.secrets["auth"] = {
        "redirect_uri": "http://localhost:8501/oauth2callback",
        "cookie_secret": "x" * 32,
        "client_id": "id",
        "client_secret": "secret",
        "server_metadata_url": "https://login.example/.well-known/openid-configuration",
    }
    at.run()
    assert not at.exception, at.exception
    assert any(b.key == "login" for b in at.button)
    assert not any(b.key.startswith("sample_") for b in at.button)


def sidebar_links(at):
    return [element for element in at.sidebar if element.type == "page_link"]


def test_every_sidebar_link_keeps_the_session_of_a_shared_link():
    """Regression: entering through /compare?session=X and then using the sidebar lost the
    session, and the Compare page dropped ?session= from its URL."""
    session_id = labelled_session().query_params["session"]
    at = app().run()
    at.query_params["session"] = session_id
    at.switch_page("views/compare_page.py").run()
    assert not at.exception, at.exception
    assert at.query_params["session"] == session_id
    links = sidebar_links(at)
    assert len(links) == 8
    assert all(link.proto.query_string == f"session={session_id}" for link in links)
    at.switch_page("views/measures_page.py").run()  # as a click on its link does
    assert not at.exception and not at.info
    assert at.dataframe[0].value.shape[0] > 3


def test_a_session_parameter_that_names_no_session_is_not_carried_on():
    at = app().run()
    at.query_params["session"] = "<b>nope</b>"
    at.switch_page("views/compare_page.py").run()
    assert not at.exception
    links = sidebar_links(at)
    assert len(links) == 8 and all(link.proto.query_string == "" for link in links)


def test_exported_figures_say_what_they_show_and_bernoulli_exports_no_empty_kl():
    from evalcore import insight
    from views import common

    pool = ec.Pool.from_dataframe(ec.read_table(ROOT / "sample_data" / "products.csv"))
    for sampler, has_kl in (("bernoulli", False), ("ais", True)):
        session = ec.Session(pool, "f1", sampler, seed=1, budget=60)
        for _ in range(30):
            item = session.next_item().item
            session.record(item, int(pool.y_true[item]))
        files = common.figure_files(session, insight.trace(session), "Products", 0.9)
        assert ("proposal-kl" in files) == has_kl
        context = json.dumps(f"Products · {common.describe('f1', sampler)} · 30 labels")
        assert all(context[1:-1] in html for html in files.values())
        assert "Estimate of F1 score" in files["estimate"]
        assert "true curve" in files["pr-curve"]
        # bootstrap curves are drawn for importance-sampling sessions (as in the app)
        assert ("bootstrap curves" in files["pr-curve"]) == has_kl


def test_a_reload_copies_the_published_session_and_history_instead_of_replaying(monkeypatch):
    at = started(budget=40)
    at.button(key="auto").click().run()
    session_id = at.query_params["session"]
    estimate = at.metric[0].value

    def reopen():
        tab = app().run()
        tab.query_params["session"] = session_id
        tab.switch_page("views/label_page.py").run()
        assert not tab.exception, tab.exception
        return tab

    reopen()  # replays from the seed and publishes a snapshot

    def no_replay(*args, **kwargs):
        raise AssertionError("replayed from the seed")

    with monkeypatch.context() as patched:
        patched.setattr(ec.Session, "_rebuild", no_replay)  # every replay from the seed
        patched.setattr(ec.Session, "history", no_replay)  # the sparkline's rows are kept too
        tab = reopen()
    assert progress(tab) == "10 of 40 labels"
    assert tab.metric[0].value == estimate
    tab.button(key="auto").click().run()  # the copy labels on like the original
    assert not tab.exception, tab.exception
    assert progress(tab) == "20 of 40 labels"


def test_a_reload_after_an_undo_copies_the_snapshot_the_undo_published(monkeypatch):
    at = started(budget=40)
    at.button(key="auto").click().run()
    session_id = at.query_params["session"]
    first = second_window(session_id)  # copies the snapshot published at 10 answers
    undo_button(first).click().run()
    undo_button(first).click().run()
    assert progress(first) == "8 of 40 labels"
    estimate = first.metric[0].value

    def no_replay(*args, **kwargs):
        raise AssertionError("replayed from the seed")

    with monkeypatch.context() as patched:
        patched.setattr(ec.Session, "_rebuild", no_replay)  # every replay from the seed
        patched.setattr(ec.Session, "history", no_replay)
        tab = second_window(session_id)
    assert progress(tab) == "8 of 40 labels"
    assert tab.metric[0].value == estimate


def convergence_without_replay(at, monkeypatch) -> None:
    """Open Convergence with every replay from the seed forbidden."""

    def no_replay(self):
        raise AssertionError("replayed from the seed")

    with monkeypatch.context() as patched:
        patched.setattr(ec.Session, "_rebuild", no_replay)
        at.switch_page("views/convergence_page.py").run()


def test_coming_back_to_convergence_traces_only_the_new_answers(monkeypatch):
    at = labelled_session(budget=60, clicks=2)
    at.switch_page("views/convergence_page.py").run()
    assert not at.exception, at.exception
    at.switch_page("views/label_page.py").run()
    at.button(key="auto").click().run()  # 30 answers now
    convergence_without_replay(at, monkeypatch)
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) >= 3


def test_coming_back_to_convergence_after_undos_rewinds_the_trace_instead_of_replaying(
    monkeypatch,
):
    at = labelled_session(budget=60, clicks=3)  # 30 answers: a checkpoint at 25
    at.switch_page("views/convergence_page.py").run()  # traced in the worker, from the seed
    assert not at.exception, at.exception
    at.switch_page("views/label_page.py").run()
    undo_button(at).click().run()
    undo_button(at).click().run()
    assert progress(at) == "28 of 60 labels"
    convergence_without_replay(at, monkeypatch)
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) == 4 and not at.info


def test_a_slow_replay_shows_the_estimate_at_once_and_the_diagnostics_when_done(monkeypatch):
    from evalcore import insight
    from views import common

    at = labelled_session(clicks=2)  # the label page keeps the estimate after each answer
    release, original = threading.Event(), insight.Trace.extend

    def slow(self, log):  # the replay in the worker thread waits until released
        if threading.current_thread().name.startswith("trace"):
            assert release.wait(60)
        return original(self, log)

    monkeypatch.setattr(insight.Trace, "extend", slow)
    monkeypatch.setattr(common, "TRACE_WAIT", 0.1)
    at.switch_page("views/convergence_page.py").run()
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) == 1  # the estimate, from the label page's rows
    assert at.info[0].value.startswith("Replaying the session's 20 answers")
    release.set()
    running = common._trace_replays()[1]
    for _ in range(600):
        if all(future.done() for _, future in running.values()):
            break
        time.sleep(0.1)
    at.run()
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) == 4  # estimate, KL, weights, ESS
    assert not at.info


def test_a_first_load_replays_the_log_once_for_the_session_its_sparkline_and_trace(monkeypatch):
    at = started(budget=40)
    at.button(key="auto").click().run()
    session_id = at.query_params["session"]
    estimate = at.metric[0].value
    from views import common

    common._snapshots().clear()  # as after a server restart
    common.histories().clear()
    common._traces()[0].clear()
    recorded = []
    record = ec.Session.record
    monkeypatch.setattr(
        ec.Session,
        "record",
        lambda self, *args, **kw: recorded.append(1) or record(self, *args, **kw),
    )
    tab = second_window(session_id)
    assert progress(tab) == "10 of 40 labels" and tab.metric[0].value == estimate
    assert len(recorded) == 10  # each saved answer replayed once, not twice
    tab.switch_page("views/convergence_page.py").run()  # traced on the same replay
    assert not tab.exception, tab.exception
    assert len(recorded) == 10 and not tab.info
    assert len(tab.get("plotly_chart")) == 4  # estimate, KL, weights, ESS
    [(level, (_, sparkline))] = [
        (key[1], entry) for key, entry in common.histories().items() if key[0] == session_id
    ]
    session = tab.session_state["open_session"][1]
    expected = session.history(level, max_points=common.TRACE_POINTS)
    np.testing.assert_array_equal(np.array(sparkline, float), np.array(expected, float))


def test_the_sparkline_rows_from_a_trace_are_the_sessions_history_where_undefined_too():
    from conftest import synthetic_pool

    from evalcore import insight
    from views import common

    pool = synthetic_pool(n=3000, positive_rate=0.003, seed=4)
    session = ec.Session(pool, "recall", "passive", seed=3, budget=40)  # no positive at first
    while not session.done:
        item = session.next_item().item
        session.record(item, pool.y_true[item])
    expected = np.array(session.history(0.95, max_points=12), float)
    assert np.isnan(expected[0]).sum() == 3  # undefined: no estimate, no interval
    rows = common.sparkline_rows(insight.trace(session, 0.95, max_points=12))
    np.testing.assert_array_equal(np.array(rows, float), expected)


def test_a_regression_session_from_the_built_in_demo_through_every_page():
    at = opened_sample("deliveries.csv")
    assert at.selectbox(key="setup_measure").value == "mae"
    assert at.selectbox(key="setup_sampler").value == "ais"
    captions = " ".join(c.value for c in at.caption)
    assert "numeric predictions with the model's own uncertainty" in captions
    assert "scikit-learn's mean_absolute_error" in captions
    at.number_input(key="setup_budget").set_value(40)
    at.button(key="start").click().run()
    assert not at.exception, at.exception
    assert not any(b.key and b.key.startswith("label_") for b in at.button)  # a number field
    field = at.text_input[0]
    assert "minutes" in field.label  # the demo's unit
    item = field.key.removeprefix("value_")
    field.set_value("**12** minutes")
    at.button(key=f"FormSubmitter:answer_{item}-Save answer").click().run()
    assert not at.exception, at.exception
    assert "is not a number" in errors(at) and "\\*\\*12\\*\\*" in errors(at)  # as text
    assert progress(at) == "0 of 40 labels"
    at.text_input[0].set_value("42.5")
    at.button(key=f"FormSubmitter:answer_{item}-Save answer").click().run()
    assert progress(at) == "1 of 40 labels"
    session_id = at.query_params["session"]
    from views import common

    assert common.store().answers(session_id)[0][1] == 42.5
    undo_button(at).click().run()
    assert progress(at) == "0 of 40 labels" and common.store().answers(session_id) == []
    at.button(key="auto").click().run()  # 10 answers from the true values
    assert progress(at) == "10 of 40 labels"
    assert at.metric[0].label == "Estimated Mean absolute error"
    at.switch_page("views/convergence_page.py").run()
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) == 4  # estimate, KL of AIS's proposal, weights, ESS
    for page in ("measures_page", "export_page", "pr_explorer_page"):
        at.switch_page(f"views/{page}.py").run()
        assert not at.exception, (page, at.exception)
    assert at.info[0].value.startswith("The precision-recall curve is for classifiers")
    at.switch_page("views/compare_page.py").run()
    run_comparison(at, ["ais", "passive"], 30, 3)
    assert len(at.get("plotly_chart")) == 2  # MSE and KL


def test_a_regression_table_upload_is_detected_and_checked():
    rows = "".join(f"{i},{i * 1.5},{2.0},{i * 1.5 + (i % 3)}\n" for i in range(50))
    at = upload(("id,prediction,sd,target\n" + rows + "50,oops,1,2\n").encode())
    assert at.radio(key=next(r.key for r in at.radio)).value.startswith("A regression model")
    assert "not numbers" in errors(at) and "rows 50" in errors(at)
    fixed = upload(("id,prediction,sd,target\n" + rows).encode())
    assert not fixed.error
    unit = next(t for t in fixed.text_input if t.key.startswith("map_unit_"))
    unit.set_value("**EUR**").run()
    fixed.button(key="use_upload").click().run()
    assert not fixed.exception, fixed.exception
    assert fixed.selectbox(key="setup_measure").value == "mae"
    fixed.button(key="start").click().run()
    assert "\\*\\*EUR\\*\\*" in fixed.text_input[0].label  # typed: shown as text
