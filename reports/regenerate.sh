#!/usr/bin/env bash
# Regenerates the reports kept as bundles from the bundles committed under reports/ alone, refitting
# nothing: hdp_vs_m and bnc_vs_rf at 5000 HDP iterations (reports/<experiment>/) and at the paper's 50000
# (reports/paper_protocol/<experiment>/), tying (reports/tying/), skdb_paper (reports/skdb_paper/) and learning_curves
# (reports/learning_curves/; its synthetic datasets need not be drawn: their digests are then not checked). From the root of a checkout with
# bncbench installed and the datasets at hand (their digests are checked against the bundles'):
#
#   BNCBENCH_DATA_DIR=../shared/datasets bash reports/regenerate.sh [TRACKING_URI]
#
# TRACKING_URI: the MLflow store the bundles are imported into first (default sqlite:///runs/papers.db);
# a cell it has finished already is left alone, so running this again imports nothing twice.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
store=${1:-sqlite:///runs/papers.db}
bncbench import reports/hdp_vs_m/bundles/* reports/bnc_vs_rf/bundles/* reports/tying/bundles/* \
    reports/skdb_paper/bundles/* reports/kdb/bundles/* reports/skdb/bundles/* reports/estimators/bundles/* \
    reports/learning_curves/bundles/* "tracking_uri=$store"
for experiment in hdp_vs_m bnc_vs_rf; do
    bncbench report --replace "experiment=$experiment" hdp.iterations=5000 "tracking_uri=$store" report_dir=reports
    bncbench report --replace "experiment=$experiment" hdp.iterations=50000 "tracking_uri=$store" report_dir=reports/paper_protocol
done
for experiment in tying kdb skdb estimators learning_curves; do
    bncbench report --replace "experiment=$experiment" "tracking_uri=$store" report_dir=reports
done
bncbench report --replace experiment=skdb_paper "tracking_uri=$store" report_dir=reports
