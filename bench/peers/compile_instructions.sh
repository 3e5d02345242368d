#!/usr/bin/env bash
# Instructions rustc spends on an incremental rebuild (source touched, built again) of each
# 100-tool crate (hundred/*), counted by callgrind: a figure that holds still on a shared
# machine, where the timings of `compile_times.sh` move by a few percent. Needs valgrind.
#
#   bash compile_instructions.sh
set -euo pipefail

# Cargo runs this script as its RUSTC_WRAPPER: rustc of a hundred-* crate under callgrind
# when a count is asked for, every other rustc as it is.
if [[ -n ${HUNDRED_WRAPPER:-} ]]; then
    rustc=$1
    shift
    if [[ -n ${COUNT_INTO:-} && " $* " == *" --crate-name hundred_"* ]]; then
        exec valgrind --tool=callgrind --callgrind-out-file="$COUNT_INTO" "$rustc" "$@" 2>/dev/null
    fi
    exec "$rustc" "$@"
fi

cd "$(dirname "$0")"
export HUNDRED_WRAPPER=1 RUSTC_WRAPPER="$PWD/compile_instructions.sh" CARGO_INCREMENTAL=1
crates=(aleph rmcp rig)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

python3 hundred/generate.py >/dev/null
declare -A count
for crate in "${crates[@]}"; do
    # Built, then rebuilt once untouched by the count, so the incremental cache is warm.
    cargo build --quiet -p "hundred-$crate"
    touch "hundred/$crate/src/lib.rs"
    cargo build --quiet -p "hundred-$crate"
    touch "hundred/$crate/src/lib.rs"
    COUNT_INTO="$out/$crate" cargo build --quiet -p "hundred-$crate"
    count[$crate]=$(awk '/^(summary|totals):/ { print $2; exit }' "$out/$crate")
done

printf '| crate (100 tools) | rustc instructions, incremental | × rmcp |\n'
printf '| --- | --- | --- |\n'
for crate in "${crates[@]}"; do
    printf '| %s | %s | %.3f |\n' "$crate" "${count[$crate]}" \
        "$(echo "${count[$crate]} / ${count[rmcp]}" | bc -l)"
done
