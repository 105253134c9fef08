import numpy as np
import pandas as pd
import pytest

from bncbench import BNClassifier
from bncbench.bnc.estimators import ESTIMATORS
from bncbench.bnc.out_of_core import fit_file
from bncbench.data import MDLDiscretizer, load_dataset
from bncbench.core.errors import ConfigError, DatasetError


@pytest.fixture(scope="module")
def hepatitis_csv(tmp_path_factory, shared_data_dir):
    """A shared dataset with numeric and nominal attributes and missing values, as a CSV file."""
    spec = {"name": "hepatitis", "source": "store", "openml_id": None, "openml_target": None, "drop": []}
    data = load_dataset(spec, shared_data_dir)
    path = tmp_path_factory.mktemp("ooc") / "hepatitis.csv"
    data.X.assign(**{"class": data.y}).to_csv(path, index=False)
    return path, data


@pytest.mark.parametrize(
    "structure,k,estimator,params",
    [("nb", None, "laplace", {}), ("tan", None, "m_estimate", {"m": 1.0}), ("kdb", 2, "mle", {}),
     ("skdb", 3, "m_estimate", {"m": 1.0}), ("aode", None, "laplace", {})],
)
def test_chunked_fit_equals_the_in_memory_fit(hepatitis_csv, structure, k, estimator, params):
    path, data = hepatitis_csv
    model = dict(structure=structure, k=k, estimator=estimator, estimator_params=params, random_state=0)
    chunked, source = fit_file(BNClassifier(**model), path, chunk_rows=40, sample_rows=10**6, numeric=data.numeric)
    discretizer = MDLDiscretizer().fit(data.X, data.y)
    X = discretizer.transform(data.X)
    in_memory = BNClassifier(**model).fit(X, data.y)
    assert chunked.parents_ == in_memory.parents_
    np.testing.assert_allclose(chunked.predict_proba(X), in_memory.predict_proba(X), rtol=1e-9)
    passes = {"nb": 2, "aode": 2, "tan": 3, "kdb": 3, "skdb": 4}[structure]  # the first pass finds values and the sample
    assert source.passes == passes


@pytest.mark.parametrize("sample_rows,cache_bytes", [(100, 2**28), (100, 0), (10**6, 2**28)])
def test_the_m_estimate_holds_out_the_rows_it_would_in_memory_whatever_the_sample(
    tmp_path, shared_data_dir, sample_rows, cache_bytes
):
    """The holdout (172 of car's 1728 rows) is drawn among all the rows and gathered in one more pass (from the
    kept ids, or from the file), so m and the probabilities are those of the in-memory fit."""
    spec = {"name": "car", "source": "store", "openml_id": None, "openml_target": None, "drop": []}
    data = load_dataset(spec, shared_data_dir)
    path = tmp_path / "car.csv"
    data.X.assign(**{"class": data.y}).to_csv(path, index=False)
    model = dict(structure="kdb", k=2, estimator="m_estimate", random_state=3)
    chunked, source = fit_file(BNClassifier(**model), path, chunk_rows=500, sample_rows=sample_rows, numeric=[],
                               cache_bytes=cache_bytes)
    in_memory = BNClassifier(**model).fit(data.X, data.y)
    assert chunked.estimator_.holdout_losses_ == pytest.approx(in_memory.estimator_.holdout_losses_, rel=1e-12)
    assert chunked.estimator_.selected_m_ == in_memory.estimator_.selected_m_
    np.testing.assert_allclose(chunked.predict_proba(data.X), in_memory.predict_proba(data.X), rtol=1e-9)
    assert source.passes == 4  # values and sample, structure, counts, the holdout's rows
    assert source.reads == (1 if cache_bytes else 4)


def test_a_sample_fits_the_discretiser(hepatitis_csv):
    path, data = hepatitis_csv
    clf, source = fit_file(BNClassifier(structure="kdb", k=1, estimator="m_estimate", random_state=1), path,
                           chunk_rows=50, sample_rows=60, numeric=data.numeric)
    assert len(source.sample) == 60
    assert clf.estimator_.selected_m_ in clf.estimator_.m_grid
    assert clf.network_.n_rows == len(data.y)  # every row is counted, whatever the sample
    proba = clf.predict_proba(source.discretizer.transform(data.X))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


@pytest.mark.parametrize("estimator", sorted(name for name, cls in ESTIMATORS.items() if cls.count_based))
def test_every_count_based_estimator_fits_in_chunks_as_in_memory(hepatitis_csv, estimator):
    path, data = hepatitis_csv
    params = {"iterations": 30} if estimator == "hdp" else {}
    model = dict(structure="kdb", k=1, estimator=estimator, estimator_params=params, random_state=0)
    chunked, _ = fit_file(BNClassifier(**model), path, chunk_rows=40, sample_rows=10**6, numeric=data.numeric)
    X = MDLDiscretizer().fit(data.X, data.y).transform(data.X)
    np.testing.assert_allclose(chunked.predict_proba(X), BNClassifier(**model).fit(X, data.y).predict_proba(X), rtol=1e-9)


@pytest.mark.parametrize("estimator", sorted(name for name, cls in ESTIMATORS.items() if not cls.count_based))
def test_estimators_that_need_every_row_are_refused(hepatitis_csv, estimator):
    path, _ = hepatitis_csv
    with pytest.raises(ConfigError, match=f"{estimator!r} needs every training row in memory.*count-based"):
        fit_file(BNClassifier(estimator=estimator), path)


def test_parquet_is_read_in_batches(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.choice(["x", "y"], 500), "b": rng.integers(0, 3, 500).astype(str)})
    frame["class"] = np.where(frame["a"] == "x", "p", "q")
    frame.to_parquet(tmp_path / "d.parquet")
    clf, source = fit_file(BNClassifier(structure="kdb", k=1, estimator="laplace"), tmp_path / "d.parquet", chunk_rows=64)
    assert clf.score(source.discretizer.transform(frame[["a", "b"]]), frame["class"]) == 1.0  # b looks numeric: binned
    assert source.passes == 3


def test_a_row_mask_fits_the_rows_it_selects_as_in_memory(hepatitis_csv):
    path, data = hepatitis_csv
    rows = np.random.default_rng(3).random(len(data.y)) < 0.5
    model = dict(structure="kdb", k=2, estimator="m_estimate", random_state=0)
    chunked, source = fit_file(BNClassifier(**model), path, chunk_rows=40, sample_rows=10**6,
                               numeric=data.numeric, rows=rows)
    X, y = data.X[rows], data.y[rows]
    discretizer = MDLDiscretizer().fit(X, y)
    in_memory = BNClassifier(**model).fit(discretizer.transform(X), y)
    assert chunked.network_.n_rows == rows.sum() and len(source.sample) == rows.sum()
    assert chunked.parents_ == in_memory.parents_
    X_all = discretizer.transform(data.X)
    np.testing.assert_allclose(chunked.predict_proba(X_all), in_memory.predict_proba(X_all), rtol=1e-9)


def test_a_row_mask_on_a_nominal_file_keeps_the_values_and_missing_of_its_rows_alone(tmp_path, shared_data_dir):
    """Read as value ids (``CsvIds``): a value and missing fields met only in rows the mask leaves out are not the
    fit's, which is the in-memory fit of the selected rows."""
    spec = {"name": "car", "source": "store", "openml_id": None, "openml_target": None, "drop": []}
    data = load_dataset(spec, shared_data_dir)
    X = data.X.astype(object)
    left_out = (X["buying"] == X["buying"].iloc[0]).to_numpy()  # every row of one value
    X.loc[left_out, "doors"] = None  # missing only there
    path = tmp_path / "car.csv"
    X.assign(**{"class": data.y}).to_csv(path, index=False)
    model = dict(structure="kdb", k=2, estimator="m_estimate", random_state=0)
    chunked, _ = fit_file(BNClassifier(**model), path, chunk_rows=300, numeric=[], rows=~left_out)
    in_memory = BNClassifier(**model).fit(data.X[~left_out], data.y[~left_out])
    buying, doors = (list(chunked.encoder_.columns_).index(c) for c in ("buying", "doors"))
    assert X["buying"].iloc[0] not in set(chunked.encoder_.categories_[buying])
    assert None not in set(chunked.encoder_.categories_[doors]) and len(chunked.encoder_.categories_[doors]) == 4
    assert chunked.parents_ == in_memory.parents_
    np.testing.assert_allclose(chunked.predict_proba(data.X[~left_out]), in_memory.predict_proba(data.X[~left_out]),
                               rtol=1e-9)


def test_kept_ids_take_one_byte_until_a_column_has_256_values_and_fit_as_the_file_does(tmp_path):
    """The first chunks' ids are kept in one byte, the later ones (a column past 255 values) in two; the fit from
    them is the fit that reads the file at every pass, and a bound too small for them keeps none."""
    rng = np.random.default_rng(0)
    n = 1200
    frame = pd.DataFrame({"many": [f"v{i % 400}" for i in range(n)], "few": rng.choice(["a", "b", "c"], n)})
    frame["class"] = np.where(rng.random(n) < 0.8, frame["few"], "a")
    frame.to_csv(path := tmp_path / "d.csv", index=False)
    model = dict(structure="kdb", k=1, estimator="m_estimate", random_state=0)
    kept, kept_source = fit_file(BNClassifier(**model), path, chunk_rows=200, numeric=[])
    assert [chunk.dtype for chunk in kept_source._ids.cached] == [np.uint8] + [np.uint16] * 5
    read, read_source = fit_file(BNClassifier(**model), path, chunk_rows=200, numeric=[], cache_bytes=0)
    small, small_source = fit_file(BNClassifier(**model), path, chunk_rows=200, numeric=[], cache_bytes=1000)
    assert (kept_source.reads, read_source.reads, small_source.reads) == (1, kept_source.passes, kept_source.passes)
    assert read_source._ids.cached is None and small_source._ids.cached is None
    X = frame.drop(columns=["class"])
    np.testing.assert_array_equal(kept.predict_proba(X), read.predict_proba(X))
    np.testing.assert_array_equal(kept.predict_proba(X), small.predict_proba(X))


def test_numeric_columns_are_those_whose_values_in_the_first_chunk_of_selected_rows_all_parse_as_numbers(tmp_path):
    rng = np.random.default_rng(1)
    n = 300
    frame = pd.DataFrame({
        "nominal": rng.choice(["a", "b"], n),
        "number": np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n).round(3)),
        "digits": rng.choice(["1", "2", "3"], n),
        "mixed": rng.choice(["4", "5"], n),
        "class": rng.choice(["yes", "no"], n),
    })
    words = np.arange(n) % 10 == 0
    frame.loc[words, "mixed"] = "word"
    frame.to_csv(path := tmp_path / "d.csv", index=False)
    model = dict(structure="nb", estimator="laplace")
    _, every_row = fit_file(BNClassifier(**model), path, chunk_rows=100)
    _, without_words = fit_file(BNClassifier(**model), path, chunk_rows=100, rows=~words)
    assert every_row.numeric == ["number", "digits"]
    assert without_words.numeric == ["number", "digits", "mixed"]
    frame.loc[200, "digits"] = "z"  # after the first chunk: still numeric, and refused when it is read as a number
    frame.to_csv(path, index=False)
    with pytest.raises(DatasetError, match=r"column 'digits' is read as numbers .* holds 'z'; name the numeric"):
        fit_file(BNClassifier(**model), path, chunk_rows=100)
