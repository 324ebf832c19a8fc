"""evalcore: label-efficient estimation of classifier performance.

Importing this package never imports Streamlit.
"""

from .bernoulli import BernoulliSampler, Round, water_fill
from .catalog import MEASURE_DEFINITIONS, MEASURE_NAMES, get_measure
from .diagnostics import effective_sample_size, kl_divergence, optimal_proposal, true_risk
from .estimators import Estimate, estimate, estimate_bernoulli, estimate_is, estimate_stratified
from .measures import Measure, MeasureError
from .oracle import (
    DirichletTreeModel,
    EMConvergenceWarning,
    ItemLevelModel,
    RecalibratedProbabilities,
    prior_from_probabilities,
)
from .pool import (
    ColumnMapping,
    Pool,
    PoolValidationError,
    detect_mapping,
    pool_warnings,
)
from .samplers import (
    AISSampler,
    Draws,
    OASISSampler,
    PassiveSampler,
    Proposal,
    StaticISSampler,
    smoothed_probabilities,
)
from .session import (
    SAMPLER_NAMES,
    ReplayError,
    Session,
    SessionError,
    informative_items,
    log_digest,
    make_sampler,
    pool_fingerprint,
)
from .simulate import Run, SimulationResult, run_once, simulate
from .store import SessionConflict, Store, StoreError
from .strata import Partition, csf_edges, equal_width_edges, partition_pool, stratify_scores
from .stratified import StratifiedSampler
from .tables import TableFormat, frame_from_bytes, read_table, table_format

__all__ = [
    "AISSampler",
    "BernoulliSampler",
    "ColumnMapping",
    "DirichletTreeModel",
    "ItemLevelModel",
    "RecalibratedProbabilities",
    "Draws",
    "EMConvergenceWarning",
    "Estimate",
    "MEASURE_NAMES",
    "MEASURE_DEFINITIONS",
    "Measure",
    "MeasureError",
    "OASISSampler",
    "Partition",
    "PassiveSampler",
    "Pool",
    "PoolValidationError",
    "Proposal",
    "ReplayError",
    "Round",
    "Run",
    "SAMPLER_NAMES",
    "Session",
    "SessionConflict",
    "SessionError",
    "Store",
    "TableFormat",
    "StoreError",
    "SimulationResult",
    "StaticISSampler",
    "StratifiedSampler",
    "csf_edges",
    "detect_mapping",
    "effective_sample_size",
    "equal_width_edges",
    "estimate",
    "estimate_bernoulli",
    "estimate_is",
    "estimate_stratified",
    "frame_from_bytes",
    "get_measure",
    "informative_items",
    "kl_divergence",
    "log_digest",
    "make_sampler",
    "optimal_proposal",
    "partition_pool",
    "pool_fingerprint",
    "prior_from_probabilities",
    "pool_warnings",
    "read_table",
    "run_once",
    "simulate",
    "smoothed_probabilities",
    "stratify_scores",
    "table_format",
    "true_risk",
    "water_fill",
]
