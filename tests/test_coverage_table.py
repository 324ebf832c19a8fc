"""The coverage table's notes (``benchmarks/coverage.py``): a row measured before a change of
the default AIS's estimate says so, and the variants named as defaults before it keep the
estimate they were measured with."""

import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import coverage  # noqa: E402


def row(sampler: str, intervals: str) -> SimpleNamespace:
    return SimpleNamespace(
        pool="abt-buy (prob)",
        sampler=sampler,
        n_labels=500,
        coverage=0.95,
        width=0.1,
        mse=1e-3,
        undefined=0.0,
        intervals=intervals,
    )


def test_a_default_ais_row_made_before_the_hindsight_weights_says_so():
    current = coverage.construction("ais")
    assert coverage.verdict(row("ais", current)) == ""
    before = current.removesuffix("+cf").removesuffix("+hw")
    assert "model of now" in coverage.verdict(row("ais", before))
    # the variants never had them: their rows are current without the tag
    assert coverage.verdict(row("ais-linear", coverage.construction("ais-linear"))) == ""


def test_a_default_ais_row_made_before_the_cost_floor_says_so_and_nothing_else():
    current = coverage.construction("ais")
    assert current.endswith("+hw+cf")
    note = coverage.verdict(row("ais", current.removesuffix("+cf")))
    assert "floor_by_cost" in note and "model of now" not in note
    # the variants never had it: their rows are current without the tag
    assert coverage.verdict(row("ais-linear", coverage.construction("ais-linear"))) == ""


def test_the_variants_of_the_defaults_before_estimate_without_the_hindsight_weights():
    for name in coverage.DEFAULT_AIS_VARIANTS - coverage.HINDSIGHT:
        sampler, options = coverage.VARIANTS[name]
        assert sampler == "ais" and options["hindsight_weights"] is False, name
    # the default before 2026-12-01 had them, and floored the saturated cells alone
    sampler, options = coverage.VARIANTS["ais-reach-floor"]
    assert sampler == "ais" and options == {"floor_by_cost": False}
    assert coverage.construction("ais-reach-floor") == coverage.construction("ais")[:-3]


def test_an_oasis_row_made_before_occams_window_says_so():
    current = coverage.construction("oasis")
    assert current.endswith("+ow") and coverage.verdict(row("oasis", current)) == ""
    assert "Occam's window" in coverage.verdict(row("oasis", current.removesuffix("+ow")))
    # the other designs never took it: their rows are current without the tag
    assert not coverage.construction("is").endswith("+ow")
