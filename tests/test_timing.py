"""No numba compilation inside a timed fit or prediction (``bncbench.core.timing``, the runner's warm-up)."""

import json
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from bncbench.core.timing import CompilationInTimingWarning, timed


def test_a_call_that_compiles_is_repeated_and_the_repeat_timed():
    @numba.njit  # a new dispatcher: its first call compiles
    def total(values):
        return values.sum()

    calls = []

    def call():
        calls.append(1)
        return total(np.arange(10.0))

    result, seconds = timed(call)
    assert result == 45.0 and len(calls) == 2 and seconds >= 0
    result, seconds = timed(call)  # compiled now: one call
    assert result == 45.0 and len(calls) == 3


def test_a_call_without_numba_runs_once():
    calls = []
    result, seconds = timed(lambda: calls.append(1) or "done")
    assert (result, len(calls)) == ("done", 1) and seconds >= 0


def test_a_call_that_always_compiles_is_not_timed():
    def new_kernel_each_time():
        return numba.njit(lambda x: x + 1)(1)

    with pytest.warns(CompilationInTimingWarning, match="each of 3 times"):
        result, seconds = timed(new_kernel_each_time, "fit")
    assert result == 2 and np.isnan(seconds)


#: In a fresh process (no kernel loaded yet), cross-validate models that call different kernels and
#: count the timed calls that had to be repeated because they compiled: the warm-up leaves none.
_FRESH_PROCESS = textwrap.dedent(
    """
    import json, sys
    import bncbench.protocol.cross_validation as runner
    from bncbench.data import load_dataset

    repeated = []
    timed = runner.timed

    def counting(function, what="call"):
        calls = []
        result = timed(lambda: calls.append(1) or function(), what)
        repeated.extend([what] * (len(calls) - 1))
        return result

    runner.timed = counting
    dataset = load_dataset({"name": "sklearn-iris", "source": "sklearn", "openml_id": None,
                            "openml_target": None, "drop": []}, None)
    for model in json.loads(sys.argv[1]):
        metrics = runner.cross_validate(dataset, model, repetitions=1, folds=2, seed=3).metrics
        assert metrics["fit_seconds"].notna().all()
    print(json.dumps(repeated))
    """
)

MODELS = [
    {"structure": "kdb", "k": 2, "estimator": "m_estimate", "estimator_params": {}},
    {"structure": "skdb", "k": 2, "estimator": "m_estimate", "estimator_params": {}},
    {"structure": "tan", "k": None, "estimator": "hdp", "estimator_params": {"iterations": 50}},
    {"structure": "aode", "k": None, "estimator": "laplace", "estimator_params": {}},
    {"structure": "nb", "k": None, "estimator": "wanbia", "estimator_params": {}},
]


def test_the_warm_up_leaves_no_compilation_to_the_timed_calls():
    models = [{"structure_params": {}, **model} for model in MODELS]
    result = subprocess.run(
        [sys.executable, "-c", _FRESH_PROCESS, json.dumps(models)], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == []


def test_the_warm_up_on_a_few_rows_says_nothing():
    """The untimed fit on at most 100 rows warns of nothing those rows alone show (nettalk's 47 classes in 93
    rows made scikit-learn call it 'a regression problem' once per cell)."""
    import warnings

    import pandas as pd

    from bncbench.protocol.cross_validation import warm_up_fit

    rng = np.random.default_rng(0)
    y = pd.Series(np.repeat([f"c{i}" for i in range(60)], 5))
    X = pd.DataFrame({"a": rng.integers(0, 3, len(y)).astype(str), "b": rng.integers(0, 2, len(y)).astype(str)})
    model = {"structure": "nb", "k": None, "structure_params": {}, "estimator": "m_estimate", "estimator_params": {}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warm_up_fit(model, X, y, X, random_state=0)
    assert [str(w.message) for w in caught] == []


def test_the_warm_ups_fit_a_sampler_at_a_few_iterations_and_other_models_as_they_are():
    """Warmed up at its own 50000 iterations, an HDP model sampled for about a second on the warm-up's rows,
    before each cell and again for each HDP model before a sweep's first cell: the warm-ups take the
    estimator's ``warm_up_params``."""
    from bncbench.protocol.cross_validation import warm_up_model

    hdp = {"structure": "tan", "k": None, "estimator": "hdp", "estimator_params": {"iterations": 50000, "tying": "single"}}
    assert warm_up_model(hdp)["estimator_params"] == {"iterations": 20, "burn_in": 10, "tying": "single"}
    assert hdp["estimator_params"] == {"iterations": 50000, "tying": "single"}  # the cell's own config unchanged
    m_estimate = {"structure": "nb", "k": None, "estimator": "m_estimate", "estimator_params": {"m": 1.0}}
    baseline = {"baseline": "random_forest", "baseline_params": {}}
    assert warm_up_model(m_estimate) is m_estimate and warm_up_model(baseline) is baseline
