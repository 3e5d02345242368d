#!/usr/bin/env bash
# Installs the MCP peers the interop tests talk to, from the package registries: the
# official Python SDK (a client of our servers) into tests/interop/.venv, and the reference
# `server-everything` (a server whose tools we wrap) into tests/interop/node_modules.
# Idempotent: does nothing when the pinned versions are already installed.
set -euo pipefail
cd "$(dirname "$0")"

stamp() { cat requirements.txt package-lock.json | sha256sum | cut -d' ' -f1; }

if [ -f .installed ] && [ "$(cat .installed)" = "$(stamp)" ] \
    && [ -x .venv/bin/python ] && [ -d node_modules/@modelcontextprotocol/server-everything ]; then
    exit 0
fi

python3 -m venv .venv
.venv/bin/pip install --quiet -r requirements.txt
npm ci --no-audit --no-fund --loglevel=error
stamp > .installed
