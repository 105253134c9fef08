#!/usr/bin/env bash
# Runs an experiment one dataset at a time and commits what finishes, so that a computation longer than a
# sitting goes on, on any machine, from what is committed (docs/bundles.md, "slices"). For each dataset of
# DATASETS: its cells WORKERS at a time (default 1; one numba thread each) into the store STORE; every 20 minutes the
# dataset's finished cells as a checkpoint bundle in reports/<experiment>/in_progress/<dataset>/, committed when
# cells finished since the last one; once every cell is finished, its bundle in reports/<experiment>/bundles/,
# committed, and its checkpoint removed. From the root of a checkout with bncbench installed:
#
#   EXPERIMENT=tying DATASETS="magic letter" BNCBENCH_DATA_DIR=../shared/datasets bash reports/slices.sh
#
# STORE: default sqlite:///runs/slices-<experiment>.db; the committed checkpoints are imported into it first,
#   and the run skips their cells.
# EXPORT: overrides that choose the exported cells, e.g. "experiment.models=[nb_hdp,tan_hdp]" for a bundle of
#   hdp_vs_m's HDP cells alone (default: every cell of the dataset).
# OVERRIDES: overrides of both the run and the export, e.g. "experiment.models=[nb_m_node,tan_m_node]" to run and
#   bundle some models of an experiment alone (default: none).
# Commits only the paths it wrote (`git commit --only`), so other work in the checkout is left alone.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
: "${EXPERIMENT:?name the experiment: EXPERIMENT=tying}" "${DATASETS:?name the datasets: DATASETS=\"magic letter\"}"
STORE=${STORE:-sqlite:///runs/slices-$EXPERIMENT.db}
EXPORT=${EXPORT:-}
OVERRIDES=${OVERRIDES:-}
CHECKPOINT_SECONDS=${CHECKPOINT_SECONDS:-1200}
WORKERS=${WORKERS:-1}
reports=reports/$EXPERIMENT
mkdir -p "$reports/bundles"
# Linux groups a session's processes (autogroup) and shares the CPU between sessions, whatever their nice:
# give this session's group the nice it was started with (nice -n ... bash reports/slices.sh), so that two
# drivers started with setsid at nice -10 and 5 get the shares those say.
echo "$(nice)" > /proc/self/autogroup 2>/dev/null || true

say() { echo "slices.sh $(date +%H:%M:%S): $*"; }

commit() {  # commit the paths (those on disk or tracked) with the message, waiting while another commit holds the index
    local message=$1 paths=() path
    shift
    for path in "$@"; do
        if [ -e "$path" ] || [ -n "$(git ls-files -- "$path")" ]; then paths+=("$path"); fi
    done
    for _ in $(seq 30); do
        git add -A -- "${paths[@]}" && git commit -q --only -m "$message" -- "${paths[@]}" && return 0
        sleep 7
    done
    say "could not commit: $message"
}

runs_in() {  # the number of runs of the bundle in the folder $1 (0 if none)
    python3 -c "import glob, json, sys; found = glob.glob(sys.argv[1] + '/*/manifest.json'); \
print(json.load(open(found[0]))['counts']['runs'] if found else 0)" "$1"
}

export_dataset() {  # export the finished cells of dataset $1 into the new folder $2
    # shellcheck disable=SC2086  # EXPORT and OVERRIDES hold several overrides
    python -m bncbench export "experiment=$EXPERIMENT" "experiment.datasets=[$1]" 'experiment.comparisons=[]' \
        $EXPORT $OVERRIDES "tracking_uri=$STORE" --out "$2"
}

if compgen -G "$reports/in_progress/*/*" > /dev/null; then
    python -m bncbench import "$reports"/in_progress/*/* "tracking_uri=$STORE"
fi
for dataset in $DATASETS; do
    say "$dataset: start"
    # shellcheck disable=SC2086  # OVERRIDES holds several overrides
    python -m bncbench run "experiment=$EXPERIMENT" "experiment.datasets=[$dataset]" "executor.n_jobs=$WORKERS" \
        numba_threads=1 $OVERRIDES "tracking_uri=$STORE" &
    run=$!
    while true; do
        for _ in $(seq $((CHECKPOINT_SECONDS / 10))); do kill -0 $run 2>/dev/null || break; sleep 10; done
        kill -0 $run 2>/dev/null || break
        folder=$(mktemp -d)
        if export_dataset "$dataset" "$folder" && [ "$(runs_in "$folder")" -gt "$(runs_in "$reports/in_progress/$dataset")" ]; then
            rm -rf "$reports/in_progress/$dataset" && mkdir -p "$reports/in_progress/$dataset"
            cp -r "$folder"/* "$reports/in_progress/$dataset/"
            commit "$reports/in_progress: the finished cells of $dataset so far ($(runs_in "$folder")), a checkpoint of its running slice" \
                "$reports/in_progress/$dataset"
        fi
        rm -rf "$folder"
    done
    wait $run
    say "$dataset: the run ended (exit status $?)"
    folder=$(mktemp -d)
    if export_dataset "$dataset" "$folder" 2>&1 | tee /dev/stderr | grep -q "cells of this configuration\.$"; then
        bundle=$(basename "$folder"/*)
        cp -r "$folder/$bundle" "$reports/bundles/"
        rm -rf "$reports/in_progress/$dataset"
        commit "$reports: $dataset, every cell, as bundle $bundle" "$reports/bundles/$bundle" "$reports/in_progress/$dataset"
        say "$dataset: bundle $bundle committed"
    else
        say "$dataset: cells are missing (above); its checkpoint stays, to go on from"
    fi
    rm -rf "$folder"
done
