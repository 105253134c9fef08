"""The published tables against the papers' text files in ../shared/papers."""

import re
from math import comb
from pathlib import Path

import pytest

from bncbench.core.errors import ConfigError
from bncbench.report.published import HDP_TABLE1, PUBLISHED, SKDB_TABLE2, SKDB_TABLE3, published_tables
from bncbench.report.published_table import parse_record

PAPERS = (
    Path(__file__).resolve().parents[3] / "shared" / "papers"
)  # ../shared/papers of the checkout
MODEL = re.compile(
    r"((nb|tan|kdb[1-5]|skdb|skdb[1-4]|skdb_fixed[1-5]|aode)_(m_estimate|m_class_kept|m_java|m1|m_class_kept_normalised|m_normalised|m_node|hdp)"
    r"|random_forest|weka_random_forest|xgboost|kdb_best_k)"
)


def paper_lines(name):
    path = PAPERS / name
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return path.read_text(encoding="utf-8").splitlines()


def test_spot_check_kdb5_line():
    assert "kDB-5 60–4–04 60–2–06" in paper_lines(HDP_TABLE1.source)
    kdb5 = {cell.column: cell for cell in HDP_TABLE1.cells if cell.row == "kDB-5"}
    assert kdb5["0/1-loss"].record == (60, 4, 4)
    assert kdb5["RMSE"].record == (60, 2, 6)
    assert (kdb5["RMSE"].a, kdb5["RMSE"].b, kdb5["RMSE"].metric) == (
        "kdb5_hdp",
        "kdb5_m_estimate",
        "rmse",
    )


@pytest.mark.parametrize(
    "key", ["hdp_table1", "hdp_table1_class_kept", "hdp_table1_java", "hdp_table1_m1", "hdp_table2", "hdp_table2_weka"]
)
def test_hdp_rows_are_lines_of_the_text(key):
    """Each row, as '<label> <0/1-loss record> <RMSE record>', is a line of the arXiv text."""
    table = PUBLISHED[key]
    lines = paper_lines(table.source)
    text = " ".join(lines)
    assert f"{table.table} {table.caption}" in text
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{table.table} Win/Draw"))
    rows = [line for line in lines[start : start + 12] if re.search(r"\d+–\d+–\d+ \d+–", line)]
    assert rows == [
        " ".join([row, *(c.printed for c in table.cells if c.row == row)]) for row in table.rows
    ]
    assert table.columns == ["0/1-loss", "RMSE"]
    assert [c.metric for c in table.cells] == ["zero_one_loss", "rmse"] * len(table.rows)
    assert all(sum(cell.record) == 68 for cell in table.cells)  # the paper's 68 datasets


def skdb_text_tables():
    """The two W-D-L matrices of the SkDB text, in order (Table 2 RMSE, then Table 3 0-1 loss)."""
    labels = {"TAN": "TAN", "AODE": "AODE", "$SKDB_k$": "SKDB_k", "SKDB": "SKDB"}
    tables = []
    for line in paper_lines(SKDB_TABLE2.source):
        label, *fields = line.split("\t")
        records = [
            tuple(map(int, record))
            for record in re.findall(r"(\d+)\s*-\s*(\d+)\s*-\s*(\d+)", "\t".join(fields))
        ]
        if label == "TAN":
            tables.append({})
        if not tables or "SKDB k_max = 5" in tables[-1]:  # outside the two matrices
            continue
        if label.startswith("SKDB $k_{\\text{max}} = 5$"):
            tables[-1]["SKDB k_max = 5"] = records
        elif label in labels and records:
            tables[-1][labels[label]] = records
    return tables


@pytest.mark.parametrize("index", [0, 1])
def test_skdb_matrices_match_the_text(index):
    table = (SKDB_TABLE2, SKDB_TABLE3)[index]
    expected = skdb_text_tables()[index]
    assert {row: [c.record for c in table.cells if c.row == row] for row in table.rows} == expected
    assert {c.metric for c in table.cells} == {("rmse", "zero_one_loss")[index]}


def test_skdb_mapping():
    cells = {(c.row, c.column): c for c in SKDB_TABLE3.cells}
    assert (cells["TAN", "k=2"].a, cells["TAN", "k=2"].b) == ("tan_m_estimate", "kdb2_m_estimate")
    assert (cells["SKDB", "k=5"].a, cells["SKDB", "k=5"].b) == (
        "skdb_m_estimate",
        "kdb5_m_estimate",
    )
    assert cells["SKDB", "k=4"].a is None and "k_max = 5" in cells["SKDB", "k=4"].unmapped
    assert cells["SKDB_k", "k=1"].a is None
    assert SKDB_TABLE3.per_dataset_significance and not HDP_TABLE1.per_dataset_significance


def test_every_mapped_model_follows_the_naming():
    for table in PUBLISHED.values():
        for cell in table.cells:
            assert (cell.a is None) == (cell.b is None) == bool(cell.unmapped)
            if cell.a is not None:
                assert MODEL.fullmatch(cell.a) and MODEL.fullmatch(cell.b), (table.key, cell)
        for scatter in table.scatters:
            assert MODEL.fullmatch(scatter.a) and MODEL.fullmatch(scatter.b)
        assert table.notes and all(isinstance(note, str) for note in table.notes)


def test_published_significance_is_the_sign_test_by_hand():
    nb = {c.column: c for c in HDP_TABLE1.cells if c.row == "Naive Bayes"}
    # 41-4-23: 2 * P(X <= 23), X ~ Binomial(64, 1/2); 40-0-28: 2 * P(X <= 28), n = 68
    assert nb["0/1-loss"].p_value == pytest.approx(2 * sum(comb(64, i) for i in range(24)) / 2**64)
    assert nb["0/1-loss"].significant
    assert nb["RMSE"].p_value == pytest.approx(2 * sum(comb(68, i) for i in range(29)) / 2**68)
    assert not nb["RMSE"].significant


@pytest.mark.parametrize(
    ("printed", "record"),
    [("60–4–04", (60, 4, 4)), ("6 - 3 - 7", (6, 3, 7)), ("16-0-0", (16, 0, 0))],
)
def test_parse_record(printed, record):
    assert parse_record(printed) == record


def test_parse_record_rejects_other_text():
    with pytest.raises(ValueError, match="not a win-draw-loss record"):
        parse_record("6-10-0 (vs best k)")


def test_published_tables_by_key():
    assert published_tables(None) == []
    assert published_tables(["skdb_table3", "hdp_table1"]) == [SKDB_TABLE3, HDP_TABLE1]
    with pytest.raises(
        ConfigError, match=r"unknown published table\(s\) 'hdp_table9'.*valid: hdp_"
    ):
        published_tables(["hdp_table9"])


def test_a_tables_forest_names_the_model_its_cells_compare_with():
    for table in PUBLISHED.values():
        forests = {cell.b for cell in table.cells if cell.b and "forest" in cell.b}
        assert bool(table.forest) == bool(forests), table.key
        assert all(f"({forest})" in table.forest for forest in forests), table.key
        assert table.forest == "" or "forest" in table.protocol


def test_each_reading_of_table1_compares_hdp_with_its_own_m_estimates():
    """One table per reading of the paper's competitor: the same records, the HDP models the same, the
    m-estimate models those of the reading, which the heading and the protocol row name."""
    readings = {key: table for key, table in PUBLISHED.items() if key.startswith("hdp_table1")}
    assert set(readings) == {"hdp_table1", "hdp_table1_class_kept", "hdp_table1_java", "hdp_table1_m1",
                             "hdp_table1_class_kept_normalised", "hdp_table1_normalised", "hdp_table1_node"}
    for table in readings.values():
        assert [c.printed for c in table.cells] == [c.printed for c in HDP_TABLE1.cells]
        assert [c.a for c in table.cells] == [c.a for c in HDP_TABLE1.cells]
        suffixes = {cell.b.split("_", 1)[1] for cell in table.cells}
        assert len(suffixes) == 1 and f"(*_{suffixes.pop()})" in table.competitor
        assert table.heading.endswith(f" with {table.competitor}")
        assert "m-estimate" in table.protocol and "m-estimate" in table.open_settings  # never "the paper's"
        assert "paper's" not in table.competitor
    assert {c.b for c in PUBLISHED["hdp_table1_class_kept"].cells} >= {"nb_m_class_kept", "skdb_m_class_kept"}
