"""Results that outlive a machine: an experiment's finished cells as a portable bundle, and back.

``export_bundle`` writes the finished runs of an experiment from one MLflow store to a folder of
parquet tables and a manifest (``bncbench.bundles.format``); ``import_bundles`` loads one or more
bundles into any store (SQLite or an mlflow server) as ordinary runs, each cell once, so that the
runs of several machines or sittings make one store and one report. A bundle is verified as it is
read (``bncbench.bundles.verify``), and a run whose cell the store holds with other numbers is a
conflict (``bncbench.bundles.load``). An imported run is tagged with its original run id, which the
report shows in place of its id in the new store, and with its bundle's id, which the report lists.
``bundle_runs`` reads bundles as those runs without a store, for a report of committed bundles.
"""

from bncbench.bundles.export import export_bundle
from bncbench.bundles.format import Bundle, BundleError, read_bundle
from bncbench.bundles.load import KEEP, ConflictError, ImportSummary, import_bundles
from bncbench.bundles.records import BundleRuns, bundle_runs

__all__ = [
    "Bundle", "BundleError", "BundleRuns", "ConflictError", "KEEP", "ImportSummary", "bundle_runs", "export_bundle",
    "import_bundles", "read_bundle",
]
