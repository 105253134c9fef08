"""A published win-draw-loss table as data: its cells, each a record (wins, draws, losses) with its
source and the two bncbench models it compares, and its scatter plots (``bncbench.report.published``
holds the transcriptions).
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from scipy.stats import binomtest

#: Significance level of the papers' sign tests.
PAPER_ALPHA = 0.05

_RECORD = re.compile(r"\s*(\d+)\s*[-–—]\s*(\d+)\s*[-–—]\s*(\d+)\s*")


def parse_record(printed: str) -> tuple[int, int, int]:
    """``"60–4–04"`` -> ``(60, 4, 4)``: a win-draw-loss record as printed (any dash or padding)."""
    match = _RECORD.fullmatch(printed)
    if match is None:
        raise ValueError(f"not a win-draw-loss record: {printed!r}")
    return tuple(map(int, match.groups()))


@dataclass(frozen=True)
class PublishedCell:
    """One published record: A's wins, draws and losses against B on one metric.

    Attributes
    ----------
    row, column : str
        Where the record is in the paper's table, labels as printed.
    metric : str
        The bncbench metric it counts (``zero_one_loss``, ``rmse``).
    printed : str
        The record as in the text file (the HDP paper pads some losses with a zero: ``60–4–04``).
    a, b : str or None
        The bncbench models compared (A's wins are counted); None where bncbench has no
        counterpart, ``unmapped`` then says why.
    unmapped : str
        Empty when ``a`` and ``b`` are set.
    """

    row: str
    column: str
    metric: str
    printed: str
    a: str | None = None
    b: str | None = None
    unmapped: str = ""

    @property
    def record(self) -> tuple[int, int, int]:
        """(wins, draws, losses)."""
        return parse_record(self.printed)

    @property
    def p_value(self) -> float:
        """Two-tailed exact sign test of the record, draws left out; 1.0 without wins or losses."""
        wins, _, losses = self.record
        return float(binomtest(wins, wins + losses, 0.5).pvalue) if wins + losses else 1.0

    @property
    def significant(self) -> bool:
        """Significant at the papers' level, :data:`PAPER_ALPHA`."""
        return self.p_value <= PAPER_ALPHA


@dataclass(frozen=True)
class PublishedScatter:
    """A published per-dataset scatter plot of two models on one metric, drawn from our results.

    Attributes
    ----------
    figure : str
        Which figure of the paper, e.g. "Fig. 6a (journal; arXiv Fig. 5a)".
    a, b, metric : str
        The models (A on the y-axis) and the metric.
    """

    figure: str
    a: str
    b: str
    metric: str


@dataclass(frozen=True)
class PublishedTable:
    """A published table of win-draw-loss records, in the paper's layout.

    Attributes
    ----------
    key : str
        Name used in ``report.published``.
    paper, source, table, caption : str
        The paper as cited (authors, year, title, journal), the text file in ``../shared/papers`` it
        was transcribed from, the table's number and its caption.
    paper_short : str
        What the report calls the paper in a heading ("HDP paper").
    also_numbered : str
        Which version of the paper ``table`` numbers, and the table's number in the other, when
        they differ ("arXiv:1708.07581; Table 4 in the journal").
    forest : str
        The random forest the table's cells compare with here, as ``protocol["forest"]`` names
        the paper's ("scikit-learn's random forest (random_forest)"); empty for a table without
        one. It tells apart two readings of one table (:attr:`heading`).
    competitor : str
        The reading of the paper's competitor the table's cells compare with here ("m-estimates backing off
        through the class to p(x) (*_m_estimate)"), beside ``protocol["m-estimate"]``, what the paper fixes of
        it; empty for a table with one reading (:attr:`heading`).
    row_header : str
        Heading of the paper's first column.
    cells : tuple of PublishedCell
        Row-major, in the paper's order.
    per_dataset_significance : bool
        True when the paper counts a dataset as a win or a loss only where a paired test on the
        folds is significant, and as a draw elsewhere (the SkDB paper: Wilcoxon signed-rank).
        Ours are then counted the same way, on the fold scores.
    in_layout : bool
        The report also shows the table in the paper's layout, rows by columns, the paper's record and
        ours in each cell.
    notes : tuple of str
        Caveats shown with the table: protocol differences, transcription remarks, footnotes.
    protocol : dict of str to str
        The paper's settings under the names of :data:`bncbench.report.run_settings.SETTINGS`
        (``{"datasets": "68", "CV": "5x2", "HDP iterations": "50000"}``), and its
        ``discretisation`` and ``forest``, set beside those of the runs read
        (:mod:`bncbench.report.differences`).
    open_settings : frozenset of str
        The settings of ``protocol`` that the paper fixes only in part (its value says what it fixes and what
        it leaves open): ours there is a reading, neither the same nor different.
    scatters : tuple of PublishedScatter
        The paper's scatter plots of the table's comparisons.
    """

    key: str
    paper: str
    source: str
    table: str
    caption: str
    row_header: str
    cells: tuple[PublishedCell, ...]
    paper_short: str = ""
    also_numbered: str = ""
    forest: str = ""
    competitor: str = ""
    per_dataset_significance: bool = False
    in_layout: bool = False
    notes: tuple[str, ...] = field(default=())
    scatters: tuple[PublishedScatter, ...] = field(default=())
    protocol: Mapping[str, str] = field(default_factory=dict)
    open_settings: frozenset[str] = frozenset()

    @property
    def heading(self) -> str:
        """The table's name in a report: "Table 2 (HDP paper) against Weka's RandomForest (...)", "Table 1
        (HDP paper) with m-estimates that never drop the class (...)"."""
        named = f"{self.table} ({self.paper_short})" if self.paper_short else self.table
        named = f"{named} against {self.forest}" if self.forest else named
        return f"{named} with {self.competitor}" if self.competitor else named

    @property
    def citation(self) -> str:
        """The paper and the table, as a reader finds them: authors (year), title, journal, table."""
        numbered = f" ({self.also_numbered})" if self.also_numbered else ""
        return f"{self.paper}, {self.table}{numbered}"

    @property
    def rows(self) -> list[str]:
        """Row labels in the paper's order."""
        return list(dict.fromkeys(cell.row for cell in self.cells))

    @property
    def columns(self) -> list[str]:
        """Column labels in the paper's order."""
        return list(dict.fromkeys(cell.column for cell in self.cells))
