#!/usr/bin/env bash
# Builds @aleph/plugin-sdk: installs its one dev dependency set (TypeScript and Node's types)
# from the npm registry and compiles src/ into dist/. Idempotent, and safe to run from several
# processes at once (the tests do).
set -euo pipefail
cd "$(dirname "$0")"

exec 9>.build.lock
flock 9

stamp() { cat package.json package-lock.json tsconfig.json src/*.ts | sha256sum | cut -d' ' -f1; }

if [ -f .built ] && [ "$(cat .built)" = "$(stamp)" ] && [ -f dist/index.js ]; then
    exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
npm run --silent build
stamp > .built
