"""Figure builders: the right traces, axes and values on fixed inputs."""

import json

import numpy as np
import pandas as pd

from evalcore import figures


def fixed_trace():
    return pd.DataFrame(
        {
            "n_labels": [10, 10, 20, 20],
            "n_draws": [12, 12, 25, 25],
            "component": ["precision@0", "recall@0"] * 2,
            "estimate": [0.5, 0.9, 0.6, 0.8],
            "ci_low": [0.3, 0.7, 0.5, 0.7],
            "ci_high": [0.7, 1.0, 0.7, 0.9],
            "kl_consecutive": [np.nan, np.nan, 0.2, 0.2],
            "kl_optimal": [1.5, 1.5, 0.7, 0.7],
            "ess": [8.0, 8.0, 15.0, 15.0],
            "true_value": [0.65, 0.85, 0.65, 0.85],
        }
    )


def test_the_estimate_figure_draws_one_component_with_its_band_and_the_truth():
    figure = figures.estimate_figure(fixed_trace(), "recall@0")
    band, estimate, truth = figure.data
    assert list(estimate.x) == [10, 20] and list(estimate.y) == [0.9, 0.8]
    assert list(band.y) == [1.0, 0.9, 0.7, 0.7]  # upper limits, then lower limits reversed
    assert list(truth.y) == [0.85, 0.85] and truth.line.dash == "dot"
    assert figure.layout.xaxis.title.text == "labels"


def test_the_kl_figure_is_on_a_log_axis_with_both_divergences():
    figure = figures.kl_figure(fixed_trace())
    names = [trace.name for trace in figure.data]
    assert names == ["D_KL(q_prev ‖ q_t)", "D_KL(q* ‖ q_t)"]
    assert list(figure.data[1].y) == [1.5, 0.7]
    assert figure.layout.yaxis.type == "log"
    without_truth = fixed_trace().assign(kl_optimal=np.nan)
    assert len(figures.kl_figure(without_truth).data) == 1


def test_the_ess_and_weight_figures():
    ess = figures.ess_figure(fixed_trace())
    assert list(ess.data[0].y) == [8.0, 15.0] and list(ess.data[1].y) == [12, 25]
    weights = figures.weights_figure(np.array([0.1, 1.0, 10.0, 0.0]))
    np.testing.assert_allclose(weights.data[0].x, [-1.0, 0.0, 1.0])  # zero weights dropped


def test_the_pr_curve_figure_plots_precision_against_recall_and_marks_the_threshold():
    curve = pd.DataFrame(
        {
            "threshold": [0.0, 0.5, 1.0],
            "precision": [0.2, 0.6, np.nan],
            "precision_low": [0.1, 0.4, np.nan],
            "precision_high": [0.3, 0.8, np.nan],
            "recall": [1.0, 0.5, 0.0],
        }
    )
    truth = pd.DataFrame(
        {"threshold": [0.0, 0.5, 1.0], "precision": [0.2, 0.7, 1.0], "recall": [1, 0.4, 0]}
    )
    sample = truth.assign(precision=[0.25, 0.55, 1.0])
    figure = figures.pr_curve_figure(curve, truth, [sample, sample], threshold=0.45)
    names = [trace.name for trace in figure.data]
    assert names == [
        "bootstrap curves",
        "bootstrap curves",
        "precision interval",
        "estimate",
        "true curve",
        "threshold 0.500",
    ]
    assert [trace.showlegend for trace in figure.data[:2]] == [True, False]
    estimate = figure.data[3]
    assert list(estimate.x) == [1.0, 0.5] and list(estimate.y) == [0.2, 0.6]  # NaN row dropped
    assert list(figure.data[-1].x) == [0.5] and list(figure.data[-1].y) == [0.6]
    assert figure.layout.xaxis.title.text == "recall"
    assert figure.layout.yaxis.title.text == "precision"


def test_the_comparison_figure_has_a_line_and_a_band_per_sampler():
    summary = pd.DataFrame(
        {
            "n_labels": [10, 20],
            "mse": [0.1, 0.05],
            "mse_low": [0.08, 0.04],
            "mse_high": [0.12, 0.06],
            "kl": [2.0, 1.0],
        }
    )
    figure = figures.comparison_figure({"AIS": summary, "Passive": summary * 2}, "mse")
    lines = [trace for trace in figure.data if trace.showlegend is not False]
    assert [trace.name for trace in lines] == ["AIS", "Passive"]
    assert list(lines[1].y) == [0.2, 0.1]
    assert len(figure.data) == 4 and figure.layout.yaxis.type == "log"
    kl = figures.comparison_figure({"AIS": summary}, "kl")
    assert len(kl.data) == 1 and kl.layout.yaxis.title.text == "D_KL(q* ‖ q_t)"


def test_every_figure_uses_the_shared_template_and_readable_log_ticks():
    built = [
        figures.estimate_figure(fixed_trace(), "recall@0", "Recall at 0"),
        figures.kl_figure(fixed_trace()),
        figures.ess_figure(fixed_trace()),
        figures.weights_figure(np.array([0.1, 1.0])),
    ]
    for figure in built:
        layout = figure.layout
        assert list(layout.template.layout.colorway) == figures._PALETTE
        assert layout.template.layout.margin.l >= 60  # y tick labels and title are not cut
        assert layout.template.layout.yaxis.automargin
    assert built[0].layout.title.text == "Estimate of Recall at 0"
    assert built[0].layout.yaxis.title.text == "Recall at 0"
    kl_axis = built[1].layout.yaxis
    assert kl_axis.type == "log" and kl_axis.dtick == 1 and kl_axis.exponentformat == "e"


def test_the_kl_figure_leaves_a_gap_where_the_proposal_did_not_change_and_says_so():
    trace = fixed_trace().assign(kl_consecutive=[0.0, 0.0, 0.2, 0.2])
    figure = figures.kl_figure(trace)
    assert np.isnan(figure.data[0].y[0]) and figure.data[0].y[1] == 0.2
    assert figure.data[0].mode == "lines+markers"  # a single point between gaps still shows
    assert "did not change" in figure.layout.annotations[0].text


def test_an_exported_figure_is_titled_and_self_contained():
    figure = figures.estimate_figure(fixed_trace(), "recall@0")
    context = "Products · F1 score by AIS · 20 labels"
    html = figures.to_html(figures.titled(figure, context))
    assert json.dumps(context)[1:-1] in html  # the figure's JSON escapes the middle dots
    assert '<script src="http' not in html and len(html) > 1_000_000  # plotly.js inlined
    assert '"displaylogo": false' in html
    assert figure.layout.title.text == "Estimate of recall@0"  # the app's figure is untouched


def test_the_pr_curve_axis_starts_just_below_the_lowest_precision_drawn():
    curve = pd.DataFrame(
        {
            "threshold": [0.0, 0.5],
            "precision": [0.93, 0.97],
            "precision_low": [0.88, 0.95],
            "precision_high": [0.97, 0.99],
            "recall": [1.0, 0.5],
        }
    )
    low, high = figures.pr_curve_figure(curve).layout.yaxis.range
    assert low == 0.8 and high == 1.02
