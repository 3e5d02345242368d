#!/usr/bin/env bash
# Builds the example plugins to WebAssembly and puts each module beside its manifest
# (`text-tools/text_tools.wasm`, `http-fetch/http_fetch.wasm`). Installs the
# wasm32-unknown-unknown target with rustup when it is missing.
set -euo pipefail
cd "$(dirname "$0")"

target=wasm32-unknown-unknown
if ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target"
fi
cargo build --quiet --locked --release --target "$target"
for plugin in text-tools http-fetch; do
    module="${plugin//-/_}.wasm"
    # Copy, then rename: a watcher never sees half a module.
    cp "target/$target/release/$module" "$plugin/.$module.tmp"
    mv "$plugin/.$module.tmp" "$plugin/$module"
done
