#!/usr/bin/env bash
# Regenerates the reports kept as bundles from the bundles committed under reports/ alone, refitting nothing
# and opening no MLflow store (`bncbench report --bundles reports/<experiment>/bundles`):
# hdp_vs_m and bnc_vs_rf at 5000 HDP iterations (reports/<experiment>/) and at the paper's 50000
# (reports/paper_protocol/<experiment>/), tying, kdb, skdb, estimators, learning_curves (its synthetic datasets need
# not be drawn: their digests are then not checked), skdb_paper, hdp_ablations and scale (reports/<experiment>/). From the
# root of a checkout with bncbench installed and the datasets at hand (their digests are checked against the bundles'):
#
#   BNCBENCH_DATA_DIR=../shared/datasets bash reports/regenerate.sh
#
# The reports are written JOBS at a time (default: one per core), largest first; each is one process, its own folder.
# To browse the same runs in the MLflow UI, import them: bncbench import reports/*/bundles/* tracking_uri=...
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
JOBS=${JOBS:-$(nproc)}
# Every committed run was made by committed code: a report refuses runs of a tree with uncommitted changes.
{
    for experiment in hdp_vs_m bnc_vs_rf; do
        echo "experiment=$experiment hdp.iterations=5000 report_dir=reports"
        echo "experiment=$experiment hdp.iterations=50000 report_dir=reports/paper_protocol"
    done
    for experiment in estimators tying kdb skdb learning_curves skdb_paper hdp_ablations scale; do
        echo "experiment=$experiment report_dir=reports"
    done
} | xargs -P "$JOBS" -L 1 sh -c 'bncbench report --replace "$@" --bundles "reports/${1#experiment=}/bundles"' sh
