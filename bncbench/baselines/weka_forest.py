"""Weka's own RandomForest, the forest the HDP paper compares with (Sect. 6.1, 6.4), run through Java.

The paper's random forest is Weka's with its defaults: 100 trees, ``log2(d) + 1`` attributes tried per
split, no minimum leaf size. Weka's RandomTree splits a nominal attribute one branch per value, which
scikit-learn's forest (``random_forest``) cannot do; this baseline runs Weka itself so that Table 2 can
be compared with the paper's learner rather than a look-alike. It needs Java and ``weka.jar``
(Debian's package ``weka``, or any Weka 3 jar named by ``weka_jar`` or the ``WEKA_JAR`` variable).

Each fit and each prediction starts a Java process running ``WekaForest.java`` (beside this module,
compiled once per process with the JDK's ``javac`` into a temporary folder), so the logged
``fit_seconds`` and ``predict_seconds`` include a Java start-up each (about 0.2 s).
"""

import os
import shutil
import subprocess
import tempfile
import zipfile
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

from bncbench.baselines.random_forest import ProbabilisticClassifier, nominal_columns
from bncbench.core.errors import ConfigError

#: Where Debian's ``weka`` package puts the jar; ``weka_jar`` or ``WEKA_JAR`` name another.
DEBIAN_WEKA_JAR = Path("/usr/share/java/weka.jar")
PROGRAM = Path(__file__).with_name("WekaForest.java")
#: A class every Weka 3 jar holds, and the program needs.
WEKA_CLASS = "weka/classifiers/trees/RandomForest.class"
#: The one value declared for a nominal column with no value in training (Weka needs one).
NO_VALUE = "(no value in training)"
#: Weka's seeds are Java ints.
_JAVA_INT = 2**31
#: The temporary folders of ``_compiled``, kept alive (and so not removed) until the process exits.
_COMPILED = []


def find_weka_jar(weka_jar: str | os.PathLike | None = None) -> Path:
    """The Weka jar to run: ``weka_jar``, else ``$WEKA_JAR``, else Debian's; refused if absent."""
    named = weka_jar or os.environ.get("WEKA_JAR")
    jar = Path(named) if named else DEBIAN_WEKA_JAR
    where = f"{jar} (named by {'weka_jar' if weka_jar else 'WEKA_JAR'})" if named else f"{jar}"
    fix = "install it (Debian: `apt-get install weka`) or name a Weka 3 jar with WEKA_JAR=/path/to/weka.jar."
    if not jar.is_file():
        raise ConfigError(f"the weka_random_forest baseline needs Weka's jar, not found at {where}: {fix}")
    if not _holds(jar, WEKA_CLASS):
        raise ConfigError(
            f"the weka_random_forest baseline needs Weka's jar, but {where} is not one (no {WEKA_CLASS} in it): {fix}"
        )
    return jar


def _holds(jar: Path, member: str) -> bool:
    """Whether the file ``jar`` is a jar (zip) archive holding ``member``."""
    try:
        with zipfile.ZipFile(jar) as archive:
            return member in set(archive.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


@cache
def weka_version(jar: Path) -> str:
    """The version the Weka jar reports (``weka.core.Version``), e.g. ``3.6.14``."""
    return _run(["java", "-cp", str(jar), "weka.core.Version"]).splitlines()[0].strip()


@cache
def _compiled(jar: Path) -> str:
    """The class path running ``WekaForest`` against ``jar``: the program compiled once per process
    into a temporary folder, removed when the process exits."""
    if shutil.which("javac") is None:
        raise ConfigError(
            "the weka_random_forest baseline compiles a small Java program and needs a JDK: `javac` is not on "
            "PATH (Debian: `apt-get install default-jdk-headless`)."
        )
    folder = tempfile.TemporaryDirectory(prefix="bncbench-weka-")
    _COMPILED.append(folder)
    _run(["javac", "-cp", str(jar), "-d", folder.name, str(PROGRAM)])
    return os.pathsep.join([str(jar), folder.name])


def _run(command: list) -> str:
    """Run a Java tool; its standard output, or an error carrying the end of what it said."""
    if shutil.which(command[0]) is None:
        raise ConfigError(f"the weka_random_forest baseline needs Java: {command[0]!r} is not on PATH.")
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"{command[0]} failed for Weka (exit {done.returncode}): " + " | ".join(said))
    return done.stdout


def _quoted(value) -> str:
    """An ARFF value in single quotes, backslash and quote escaped."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


class WekaRandomForestBaseline(ProbabilisticClassifier):
    """Weka's ``weka.classifiers.trees.RandomForest`` with ``-I n_estimators -K 0`` (``K = 0``: Weka's
    default number of attributes per split) and the seed ``-S``.

    Nominal columns are Weka nominal attributes with the training values; with ``nominal_numbers`` the
    numeric columns are too, one value per distinct number: the bin codes of the MDL-discretised folds,
    given to Weka as the discretised nominal attributes they are. A value unseen in training, or
    missing, is Weka's missing value.

    Parameters
    ----------
    n_estimators : int, default 100
    nominal_numbers : bool, default True
        Numeric columns hold bin codes (integers) and are nominal; False gives Weka numbers (for
        ``discretise: false``). A non-integer value with True is refused.
    weka_jar : str, optional
        Path of ``weka.jar``; default ``$WEKA_JAR``, else ``/usr/share/java/weka.jar``.
    random_state : int, optional
        Weka's ``-S`` (taken modulo 2**31); None is Weka's default seed 1.
    """

    @staticmethod
    def provenance_tags(params: dict) -> dict:
        """Tags saying which Weka a run of these ``params`` uses (the fit refuses a missing one)."""
        try:
            jar = find_weka_jar(params.get("weka_jar"))
        except ConfigError:
            return {"version.weka": "not found"}
        return {"version.weka": weka_version(jar), "weka.jar": str(jar.resolve())}

    def __init__(self, n_estimators=100, nominal_numbers=True, weka_jar=None, random_state=None):
        self.n_estimators = n_estimators
        self.nominal_numbers = nominal_numbers
        self.weka_jar = weka_jar
        self.random_state = random_state

    def fit(self, X: pd.DataFrame, y):
        jar = find_weka_jar(self.weka_jar)
        nominal = set(nominal_columns(X))
        if self.nominal_numbers:
            for column in set(X.columns) - nominal:
                values = X[column].dropna().to_numpy(dtype=float)
                if not np.array_equal(values, np.round(values)):
                    raise ConfigError(
                        f"column {column!r} has non-integer numbers, but weka_random_forest takes numbers as "
                        "bin codes (nominal_numbers: true): discretise the folds (discretise: true) or set "
                        "nominal_numbers: false."
                    )
            nominal = set(X.columns)
        self.values_ = {c: sorted({str(v) for v in X[c].dropna()}) if c in nominal else None for c in X.columns}
        self.classes_ = np.unique(np.asarray(y))
        seed = 1 if self.random_state is None else int(self.random_state) % _JAVA_INT
        options = ["-I", str(int(self.n_estimators)), "-K", "0", "-S", str(seed)]
        with tempfile.TemporaryDirectory(prefix="bncbench-weka-") as folder:
            train, model = Path(folder) / "train.arff", Path(folder) / "forest.model"
            self._write_arff(train, X, np.asarray(y))
            _run(["java", "-cp", _compiled(jar), "WekaForest", "fit", str(train), str(model), *options])
            self.forest_ = model.read_bytes()
        return self

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        check_is_fitted(self, "forest_")
        jar = find_weka_jar(self.weka_jar)
        with tempfile.TemporaryDirectory(prefix="bncbench-weka-") as folder:
            test, model = Path(folder) / "test.arff", Path(folder) / "forest.model"
            model.write_bytes(self.forest_)
            self._write_arff(test, X, None)
            out = _run(["java", "-cp", _compiled(jar), "WekaForest", "predict", str(test), str(model)])
        proba = np.array([line.split(",") for line in out.splitlines()], dtype=float).reshape(len(X), -1)
        if proba.shape[1] != len(self.classes_):
            raise RuntimeError(f"Weka gave {proba.shape[1]} class probabilities per row, not {len(self.classes_)}.")
        return proba

    def _write_arff(self, path: Path, X: pd.DataFrame, y) -> None:
        """``X`` (and the class ``y``, or missing) as ARFF with the training header: nominal values
        unseen in training and missing values are ``?``."""
        if list(X.columns) != list(self.values_):
            raise ValueError(f"X has columns {list(X.columns)}, but the forest was fitted on {list(self.values_)}.")
        lines = ["@relation bncbench"]
        cells = []
        for i, (column, values) in enumerate(self.values_.items()):
            # Weka's trees fail on a nominal attribute with no value: one no row takes stands in
            kind = "numeric" if values is None else "{" + ",".join(map(_quoted, values or [NO_VALUE])) + "}"
            lines.append(f"@attribute {_quoted(f'a{i}')} {kind}")
            if values is None:
                cells.append(X[column].astype(float).map(lambda v: "?" if np.isnan(v) else repr(v)))
            else:
                text = X[column].map(str).where(X[column].notna(), None)
                cells.append(text.map(lambda v, known=set(values): _quoted(v) if v in known else "?"))
        lines.append("@attribute class {" + ",".join(_quoted(c) for c in self.classes_) + "}")
        cells.append(["?"] * len(X) if y is None else [_quoted(c) for c in y])
        lines.append("@data")
        rows = (",".join(row) for row in zip(*(list(column) for column in cells)))
        path.write_text("\n".join([*lines, *rows]) + "\n", encoding="utf-8")
