"""Plotly figures for the insight pages, built from the tables of ``evalcore.insight`` and
``evalcore.simulate`` (plotly only: testable without a browser)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

__all__ = [
    "TEMPLATE",
    "CONFIG",
    "titled",
    "to_html",
    "estimate_figure",
    "kl_figure",
    "ess_figure",
    "weights_figure",
    "pr_curve_figure",
    "comparison_figure",
]

_BAND = "rgba(31,119,180,0.18)"
_PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]

# One look for the app and the exported files: the app draws with ``theme=None`` so Streamlit
# does not restyle what a download would show differently.
TEMPLATE = go.layout.Template(
    layout=dict(
        colorway=_PALETTE,
        font=dict(family="Source Sans Pro, Helvetica Neue, Arial, sans-serif", size=14),
        title=dict(x=0, xanchor="left", font=dict(size=17)),
        paper_bgcolor="white",
        plot_bgcolor="white",
        height=420,
        margin=dict(l=70, r=20, t=60, b=60),
        legend=dict(orientation="h", yanchor="top", y=-0.18, x=0, xanchor="left"),
        xaxis=dict(gridcolor="#e5e5e5", linecolor="#888", ticks="outside", automargin=True),
        yaxis=dict(gridcolor="#e5e5e5", linecolor="#888", ticks="outside", automargin=True),
    )
)
# Plotly's own config for every figure: no logo, no link to its cloud (the app is offline).
CONFIG = {"displaylogo": False}


def _layout(figure: go.Figure, title: str, x: str, y: str, log_y: bool = False) -> go.Figure:
    figure.update_layout(template=TEMPLATE, title=title, xaxis_title=x, yaxis_title=y)
    if log_y:
        # one tick per power of ten, written 1e-4, not "100µ" with crowded minor labels
        figure.update_yaxes(type="log", dtick=1, exponentformat="e", minor=dict(showgrid=False))
    return figure


def titled(figure: go.Figure, context: str) -> go.Figure:
    """A copy of ``figure`` whose title ends with ``context`` (pool, measure, sampler, labels),
    so that a file read on its own says what it shows."""
    copy = go.Figure(figure)
    top = (figure.layout.margin.t or TEMPLATE.layout.margin.t) + 20
    copy.update_layout(title=f"{figure.layout.title.text}<br><sup>{context}</sup>", margin_t=top)
    return copy


def to_html(figure: go.Figure) -> str:
    """A self-contained HTML page (plotly.js inlined: opens offline) at the app's size."""
    return figure.to_html(
        include_plotlyjs=True, full_html=True, config=CONFIG, default_width="100%"
    )


def _band(x, low, high, name, color=_BAND) -> go.Scatter:
    x = list(x)
    return go.Scatter(
        x=x + x[::-1],
        y=list(high) + list(low)[::-1],
        fill="toself",
        fillcolor=color,
        line_width=0,
        hoverinfo="skip",
        name=name,
    )


def estimate_figure(trace: pd.DataFrame, component: str, name: str | None = None) -> go.Figure:
    """The estimate of ``component`` against labels with its interval band, and the true
    value as a dotted line when known; ``name`` is what titles call it (the component's id
    when not given)."""
    rows = trace[trace.component == component]
    figure = go.Figure()
    figure.add_trace(_band(rows.n_labels, rows.ci_low, rows.ci_high, "interval"))
    figure.add_trace(go.Scatter(x=rows.n_labels, y=rows.estimate, name="estimate"))
    truth = rows.true_value.dropna()
    if len(truth):
        figure.add_trace(
            go.Scatter(
                x=[rows.n_labels.min(), rows.n_labels.max()],
                y=[truth.iloc[0]] * 2,
                name="true value",
                mode="lines",
                line=dict(dash="dot", color="gray"),
            )
        )
    name = name or component
    return _layout(figure, f"Estimate of {name}", "labels", name)


def kl_figure(trace: pd.DataFrame) -> go.Figure:
    """KL divergence between consecutive proposals and, with true labels, from the optimal
    proposal q* (seed 003 Fig. 2, upper panel); log scale."""
    rows = trace.drop_duplicates("n_labels")
    figure = go.Figure()
    for column, name in (
        ("kl_consecutive", "D_KL(q_prev ‖ q_t)"),
        ("kl_optimal", "D_KL(q* ‖ q_t)"),
    ):
        values = rows[column].where(rows[column] > 0)  # 0 has no place on a log axis
        if column == "kl_optimal" and values.isna().all():
            continue
        figure.add_trace(go.Scatter(x=rows.n_labels, y=values, name=name, mode="lines+markers"))
    figure = _layout(figure, "Convergence of the proposal", "labels", "KL divergence", log_y=True)
    figure.add_annotation(
        text="A gap: the proposal did not change there<br>(KL 0 cannot be drawn on a log axis).",
        xref="paper",
        yref="paper",
        x=0,
        y=1.02,
        xanchor="left",
        yanchor="bottom",
        align="left",
        showarrow=False,
        font=dict(size=12, color="#666"),
    )
    return figure.update_layout(margin_t=100)  # room for the title and the note's two lines


def ess_figure(trace: pd.DataFrame) -> go.Figure:
    rows = trace.drop_duplicates("n_labels")
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=rows.n_labels, y=rows.ess, name="effective sample size"))
    figure.add_trace(
        go.Scatter(
            x=rows.n_labels,
            y=rows.n_draws,
            name="draws",
            line=dict(dash="dot", color="gray"),
        )
    )
    return _layout(figure, "Effective sample size of the weights", "labels", "observations")


def weights_figure(weights: np.ndarray) -> go.Figure:
    """The distribution of the weights, on a log axis (they span orders of magnitude)."""
    positive = np.asarray(weights, dtype=float)
    positive = positive[positive > 0]
    figure = go.Figure(go.Histogram(x=np.log10(positive), nbinsx=40, name="weights"))
    figure = _layout(figure, "Distribution of the weights", "log10(weight)", "observations")
    return figure


def pr_curve_figure(
    curve: pd.DataFrame,
    true_curve: pd.DataFrame | None = None,
    samples: list[pd.DataFrame] = (),
    threshold: float | None = None,
    decimals: int = 3,
) -> go.Figure:
    """The estimated PR curve (precision against recall) with pointwise precision intervals,
    bootstrap curves in light grey, the true curve when known, and the point at
    ``threshold``; thresholds are shown with ``decimals`` decimals."""
    figure = go.Figure()
    for index, sample in enumerate(samples):
        figure.add_trace(
            go.Scatter(
                x=sample.recall,
                y=sample.precision,
                mode="lines",
                line=dict(color="rgba(120,120,120,0.25)", width=1),
                name="bootstrap curves",
                showlegend=index == 0,
                legendgroup="bootstrap",
                hoverinfo="skip",
            )
        )
    defined = curve.dropna(subset=["precision", "recall"])
    figure.add_trace(
        _band(defined.recall, defined.precision_low, defined.precision_high, "precision interval")
    )
    figure.add_trace(
        go.Scatter(
            x=defined.recall,
            y=defined.precision,
            name="estimate",
            customdata=defined.threshold,
            hovertemplate=f"threshold %{{customdata:.{decimals}f}}<br>recall %{{x:.3f}}<br>"
            "precision %{y:.3f}<extra></extra>",
        )
    )
    if true_curve is not None:
        figure.add_trace(
            go.Scatter(
                x=true_curve.recall,
                y=true_curve.precision,
                name="true curve",
                line=dict(dash="dot", color="black"),
            )
        )
    if threshold is not None:
        row = curve.iloc[int(np.argmin(np.abs(curve.threshold.to_numpy() - threshold)))]
        figure.add_trace(
            go.Scatter(
                x=[row.recall],
                y=[row.precision],
                mode="markers",
                marker=dict(size=12, color="#d62728"),
                name=f"threshold {row.threshold:.{decimals}f}",
            )
        )
    figure = _layout(figure, "Precision-recall curve", "recall", "precision")
    figure.update_xaxes(range=[0, 1.02])
    # the precision axis starts a little below the lowest limit drawn: a curve that keeps
    # precision high would otherwise be squeezed into the top corner
    lows = [defined.precision_low.min(), defined.precision.min()]
    if true_curve is not None:
        lows.append(true_curve.precision.min())
    low = np.nanmin(np.asarray(lows, dtype=float)) if len(defined) else 0.0
    figure.update_yaxes(range=[max(0.0, np.floor((low - 0.05) * 10) / 10), 1.02])
    return figure


def comparison_figure(summaries: dict[str, pd.DataFrame], metric: str = "mse") -> go.Figure:
    """MSE (with its bootstrap band) or mean KL against labels, one line per sampler, log
    scale, as seed 003 Fig. 2-3. ``summaries`` maps sampler -> ``SimulationResult.summary()``."""
    figure = go.Figure()
    for index, (name, summary) in enumerate(summaries.items()):
        color = _PALETTE[index % len(_PALETTE)]
        rows = summary.dropna(subset=[metric])
        if metric == "mse" and len(rows):
            rgba = "rgba({},{},{},0.15)".format(*(int(color[i : i + 2], 16) for i in (1, 3, 5)))
            band = _band(rows.n_labels, rows.mse_low, rows.mse_high, f"{name} 95% CI", rgba)
            band.showlegend = False
            figure.add_trace(band)
        figure.add_trace(
            go.Scatter(x=rows.n_labels, y=rows[metric], name=name, line=dict(color=color))
        )
    titles = {
        "mse": ("Mean squared error", "MSE"),
        "kl": ("Proposal convergence", "D_KL(q* ‖ q_t)"),
    }
    title, axis = titles.get(metric, (metric, metric))
    return _layout(figure, title, "labels", axis, log_y=True)
