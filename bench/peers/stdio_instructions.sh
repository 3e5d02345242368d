#!/usr/bin/env bash
# Instructions per `tools/call` round trip over stdio, client and server each counted:
# `round-trips stdio SERVER N TOOL` under callgrind, following the child (`peer-server`).
# Each process is counted whole, once with N round trips and once with none: the
# difference over N is what a round trip costs it (start-up, the handshake and the ten
# uncounted round trips cancel out).
#
#   bash stdio_instructions.sh [N]     # N round trips (default 500), every server and tool
set -euo pipefail
cd "$(dirname "$0")"
n=${1:-500}
cargo build --release --bin round-trips --bin peer-server >/dev/null 2>&1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# One file per process: the child's is the one whose command is `peer-server`.
total() {
    local file
    file=$(grep -l "^cmd:.*$1" "$out"/cg.* | head -1)
    awk '/^(summary|totals):/ { print $2; exit }' "$file"
}
counts() {
    rm -f "$out"/cg.*
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$out/cg.%p" \
        target/release/round-trips stdio "$1" "$2" "$3" >/dev/null 2>&1
    echo "$(total round-trips) $(total peer-server)"
}
printf '%-16s %-9s %10s %10s %10s\n' server tool client server total
for server in aleph rmcp rmcp-structured; do
    for tool in add distance; do
        read -r client_idle server_idle < <(counts "$server" 0 "$tool")
        read -r client_busy server_busy < <(counts "$server" "$n" "$tool")
        client=$(((client_busy - client_idle) / n))
        served=$(((server_busy - server_idle) / n))
        printf '%-16s %-9s %10d %10d %10d\n' "$server" "$tool" "$client" "$served" $((client + served))
    done
done
