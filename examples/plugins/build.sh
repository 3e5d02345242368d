#!/usr/bin/env bash
# Builds the example plugins: the WebAssembly ones to modules beside their manifests
# (`text-tools/text_tools.wasm`, `http-fetch/http_fetch.wasm`), installing the
# wasm32-unknown-unknown target with rustup when it is missing; and the Node.js ones
# (`weather-node`, `notes-node`, `echo-bridge`) by building the SDK in `sdk/node` and
# installing it into each as a copy (`--install-links`; Node's permission model would refuse
# a link out of the plugin's directory).
set -euo pipefail
cd "$(dirname "$0")"

target=wasm32-unknown-unknown
if ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target"
fi
cargo build --quiet --locked --release --target "$target"
for plugin in text-tools http-fetch call-guard; do
    module="${plugin//-/_}.wasm"
    # Copy, then rename: a watcher never sees half a module.
    cp "target/$target/release/$module" "$plugin/.$module.tmp"
    mv "$plugin/.$module.tmp" "$plugin/$module"
done

bash ../../sdk/node/build.sh
for plugin in weather-node notes-node echo-bridge; do
    (cd "$plugin" && npm ci --install-links --no-audit --no-fund --loglevel=error)
done
