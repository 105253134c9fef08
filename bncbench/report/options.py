"""``ReportOptions``: what a report shows, as one value. Made from an experiment's plan (``of_plan``) or its
settings (``of_settings``), or by hand; checked without any data (``check``) before an experiment runs;
:func:`bncbench.report.compute.compute_report` takes it with the runs.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from bncbench.core.errors import ConfigError
from bncbench.protocol.cell import Plan
from bncbench.protocol.models import HDP_TYINGS
from bncbench.report.best_of import check_best_of
from bncbench.report.published import published_tables
from bncbench.report.significant_wdl import check_counting
from bncbench.report.tables import pair
from bncbench.report.win_draw_loss import check_options

#: The ``report.*`` settings of an experiment that are options of its report.
SETTINGS = ("draws", "round", "alpha", "published", "reference_tying", "counting", "best_of")


@dataclass(frozen=True)
class ReportOptions:
    """What a report compares and how.

    Attributes
    ----------
    metrics : tuple of str
        The metrics compared, e.g. ``("zero_one_loss", "rmse")``.
    comparisons : tuple of mapping
        ``{"a": model, "b": model}`` each, as in ``experiment.comparisons``.
    datasets, models : tuple of str or None
        The experiment's datasets and models; None: every one logged.
    draws, round, alpha
        See :func:`bncbench.report.win_draw_loss.win_draw_loss`.
    published : tuple of str
        Keys of :data:`bncbench.report.published.PUBLISHED` to show beside ours.
    reference_tying : str
        The tying the win-loss curves against a tying compare the others with (``level`` in the HDP paper,
        journal Fig. 5).
    folds_per_repetition : int
        Folds per cross-validation repetition, for the 5x2cv tests.
    counting : {"means", "wilcoxon"}
        How the comparisons' W-D-L count a dataset: by the mean losses, or as the SkDB paper counts
        (:mod:`bncbench.report.significant_wdl`).
    best_of : mapping
        ``{name: [model, ...]}``: models picked per dataset in hindsight (:mod:`bncbench.report.best_of`),
        which comparisons and published tables may name.
    """

    metrics: tuple[str, ...]
    comparisons: tuple[Mapping[str, str], ...] = ()
    datasets: tuple[str, ...] | None = None
    models: tuple[str, ...] | None = None
    draws: str = "exclude"
    round: int | None = None
    alpha: float = 0.05
    published: tuple[str, ...] = ()
    reference_tying: str = "level"
    folds_per_repetition: int = 2
    counting: str = "means"
    best_of: Mapping[str, Sequence[str]] = field(default_factory=dict)

    @classmethod
    def of_settings(cls, metrics: Iterable[str], comparisons: Iterable[Mapping[str, str]], settings: Mapping,
                    **plan) -> "ReportOptions":
        """The options of an experiment's ``metrics``, ``comparisons`` and ``report.*`` ``settings`` (those
        absent: the defaults), and ``plan``'s datasets, models and folds per repetition if given."""
        given = {key: settings[key] for key in SETTINGS if key in settings}
        published = given.get("published") or ()
        given["published"] = tuple(published) if isinstance(published, list | tuple) else published
        given["best_of"] = dict(given.get("best_of") or {})
        return cls(tuple(metrics), tuple(comparisons), **given, **plan)

    @classmethod
    def of_plan(cls, plan: Plan) -> "ReportOptions":
        """The options of a plan's experiment (a plan without cells: every dataset and model logged)."""
        return cls.of_settings(plan.metrics, plan.comparisons, plan.report, datasets=tuple(plan.datasets) or None,
                               models=tuple(plan.models) or None, folds_per_repetition=plan.cv.folds)

    @property
    def sign_test(self) -> dict:
        """``draws``, ``round`` and ``alpha``, as :func:`bncbench.report.win_draw_loss.win_draw_loss` takes them."""
        return {"draws": self.draws, "round": self.round, "alpha": self.alpha}

    def shown(self) -> dict:
        """The settings a report states: the sign test's, the published tables and the reference tying, and
        ``counting`` and ``best_of`` off their defaults (added after reports were committed)."""
        return {**self.sign_test, "published": list(self.published), "reference_tying": self.reference_tying,
                **({"counting": self.counting} if self.counting != "means" else {}),
                **({"best_of": dict(self.best_of)} if self.best_of else {})}

    def check(self, known_metrics: Iterable[str]) -> None:
        """Check the options without any data, before an experiment runs; ``known_metrics``: those every run
        logs, among which ``metrics`` must be.

        Raises
        ------
        ConfigError
            Naming the setting that is wrong and what it accepts.
        """
        for comparison in self.comparisons:
            a, b = pair(comparison)
            if a == b:
                raise ConfigError(f"comparison {dict(comparison)} compares a model with itself.")
        known_metrics = list(known_metrics)
        if not self.metrics:
            raise ConfigError("experiment.metrics is empty, so the report would compare nothing; name at least one "
                              f"of {', '.join(known_metrics)}.")
        unknown = [metric for metric in self.metrics if metric not in known_metrics]
        if unknown:
            raise ConfigError(f"experiment.metrics names {unknown}; the metrics of every run are "
                              f"{', '.join(known_metrics)}.")
        check_options(self.draws, self.round, self.alpha)
        check_counting(self.counting)
        check_best_of(self.best_of)
        published_tables(self.published)
        if self.reference_tying not in HDP_TYINGS:
            raise ConfigError(f"report.reference_tying must be one of {', '.join(HDP_TYINGS)}, "
                              f"got {self.reference_tying!r}.")
