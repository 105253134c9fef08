#!/usr/bin/env bash
# Regenerates the reports kept as bundles from the bundles committed under reports/ alone, refitting nothing
# and opening no MLflow store (`bncbench report --bundles reports/<experiment>/bundles`):
# hdp_vs_m and bnc_vs_rf at 5000 HDP iterations (reports/<experiment>/) and at the paper's 50000
# (reports/paper_protocol/<experiment>/), tying, kdb, skdb, estimators, learning_curves (its synthetic datasets need
# not be drawn: their digests are then not checked), skdb_paper and hdp_ablations (reports/<experiment>/). From the
# root of a checkout with bncbench installed and the datasets at hand (their digests are checked against the bundles'):
#
#   BNCBENCH_DATA_DIR=../shared/datasets bash reports/regenerate.sh
#
# To browse the same runs in the MLflow UI, import them: bncbench import reports/*/bundles/* tracking_uri=...
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Every committed run was made by committed code: a report refuses runs of a tree with uncommitted changes.
report() {  # experiment, then the other overrides
    bncbench report --replace "experiment=$1" "${@:2}" --bundles "reports/$1/bundles"
}
for experiment in hdp_vs_m bnc_vs_rf; do
    report "$experiment" hdp.iterations=5000 report_dir=reports
    report "$experiment" hdp.iterations=50000 report_dir=reports/paper_protocol
done
for experiment in tying kdb skdb estimators learning_curves skdb_paper hdp_ablations; do
    report "$experiment" report_dir=reports
done
