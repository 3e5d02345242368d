#!/usr/bin/env bash
# One in-process benchmark group at several stack placements: address-space randomization
# off (`setarch -R`), the stack moved down by an environment variable of N bytes, for each
# N given (by default 128 to 3,968 in steps of 256, a page's worth). Prints the floor, the
# aleph-tools figure and their ratio at each placement: a single run lands on one of them
# at random, and this shows the spread a run can land in.
#
#   bash placements.sh                               # `add, from a value`
#   bash placements.sh 'distance, from a value' 0 1536 2048
set -euo pipefail
cd "$(dirname "$0")"

group=${1:-add, from a value}
shift || true
offsets=("$@")
if ((${#offsets[@]} == 0)); then
    mapfile -t offsets < <(seq 128 256 4000)
fi

bench=$(cargo bench --bench in_process --no-run 2>&1 |
    sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -n 1)
if [[ -z $bench ]]; then
    echo "placements.sh: the in_process bench did not build" >&2
    exit 1
fi

printf '%8s  %10s  %12s  %s\n' offset floor aleph-tools ratio
for offset in "${offsets[@]}"; do
    pad=$(head -c "$offset" /dev/zero | tr '\0' x)
    # The two medians, floor first, as criterion prints them (`time: [low median high]`).
    read -r floor aleph < <(env PAD="$pad" setarch -R "$bench" --bench "^$group/" \
        --warm-up-time 1 --measurement-time 3 2>&1 |
        awk '/time:/ { printf "%s ", $(NF - 3) } END { print "" }')
    awk -v o="$offset" -v f="$floor" -v a="$aleph" \
        'BEGIN { printf "%8d  %8.1f ns  %8.1f ns  %.2f\n", o, f, a, a / f }'
done
