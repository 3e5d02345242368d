#!/usr/bin/env bash
# Builds @aleph/plugin-sdk: installs its one dev dependency set (TypeScript and Node's types)
# from the npm registry and compiles src/ into dist/cjs and dist/esm (scripts/build.mjs).
# Idempotent, and safe to run from several processes at once (the tests do). Runs on Linux
# and macOS.
set -euo pipefail
cd "$(dirname "$0")"

# One build at a time: an exclusive lock on `.build.lock`, held until the script exits.
# flock(1) where there is one; macOS has none, and there perl's flock takes the same lock on
# the same open file. With neither, the build runs unlocked.
exec 9>.build.lock
if command -v flock >/dev/null 2>&1; then
    flock 9
elif command -v perl >/dev/null 2>&1; then
    perl -MFcntl=:flock -e 'open(my $lock, ">&=", 9) or die "$!\n"; flock($lock, LOCK_EX) or die "$!\n"'
else
    echo "$0: neither flock nor perl is installed; building without a lock" >&2
fi

# sha256sum, or on macOS `shasum -a 256`, which prints the same.
if command -v sha256sum >/dev/null 2>&1; then
    sha256() { sha256sum; }
else
    sha256() { shasum -a 256; }
fi

# What the build is made from; src/version.ts is made by the build, from package.json.
stamp() {
    for file in package.json package-lock.json tsconfig*.json scripts/*.mjs src/*.ts; do
        [ "$file" = src/version.ts ] || cat "$file"
    done | sha256 | cut -d' ' -f1
}

if [ -f .built ] && [ "$(cat .built)" = "$(stamp)" ] \
    && [ -f dist/cjs/index.js ] && [ -f dist/esm/index.js ]; then
    exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
npm run --silent build
stamp > .built
