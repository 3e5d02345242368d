#!/usr/bin/env bash
# Build time of a crate with 100 tools written for each framework (hundred/*), dependencies
# built beforehand, in the dev profile: incremental (the crate's source touched, then built
# again) and from scratch without incremental compilation (the crate cleaned, then built).
# Prints the median of RUNS builds of each (default 5) and its ratio to rmcp's.
#
#   bash compile_times.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")"
runs=${1:-5}
crates=(aleph rmcp rig)

python3 hundred/generate.py >/dev/null
for crate in "${crates[@]}"; do
    cargo build --quiet -p "hundred-$crate"
done

# Seconds one build of `hundred-$1` takes; $2 is `incremental` or `scratch`.
build_once() {
    local crate=$1 mode=$2 start end
    if [[ $mode == incremental ]]; then
        touch "hundred/$crate/src/lib.rs"
        start=$(date +%s.%N)
        CARGO_INCREMENTAL=1 cargo build --quiet -p "hundred-$crate"
    else
        cargo clean --quiet -p "hundred-$crate"
        start=$(date +%s.%N)
        CARGO_INCREMENTAL=0 cargo build --quiet -p "hundred-$crate"
    fi
    end=$(date +%s.%N)
    echo "$end - $start" | bc -l
}

median() {
    sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

declare -A result
for mode in incremental scratch; do
    # Warm the mode's caches once, uncounted.
    for crate in "${crates[@]}"; do build_once "$crate" "$mode" >/dev/null; done
    for crate in "${crates[@]}"; do
        result[$crate,$mode]=$(for _ in $(seq "$runs"); do build_once "$crate" "$mode"; done | median)
    done
done

printf '| crate (100 tools) | incremental | × rmcp | from scratch, non-incremental | × rmcp |\n'
printf '| --- | --- | --- | --- | --- |\n'
for crate in "${crates[@]}"; do
    printf '| %s | %.2f s | %.2f | %.2f s | %.2f |\n' "$crate" \
        "${result[$crate,incremental]}" \
        "$(echo "${result[$crate,incremental]} / ${result[rmcp,incremental]}" | bc -l)" \
        "${result[$crate,scratch]}" \
        "$(echo "${result[$crate,scratch]} / ${result[rmcp,scratch]}" | bc -l)"
done
