#!/usr/bin/env bash
# Builds the example plugins: the WebAssembly ones to modules beside their manifests
# (`text-tools/text_tools.wasm`, `http-fetch/http_fetch.wasm`, `call-guard/call_guard.wasm`),
# installing the wasm32-unknown-unknown target with rustup when it is missing; and the
# Node.js ones
# (`weather-node`, `notes-node`, `echo-bridge`) by building the SDK in `sdk/node` and
# installing it into each as a copy (`--install-links`; Node's permission model would refuse
# a link out of the plugin's directory). Idempotent, and safe to run from several processes
# at once (the tests do): one builds while the others wait, and a plugin's packages are
# reinstalled only when its package files or the SDK changed. Runs on Linux and macOS.
set -euo pipefail
cd "$(dirname "$0")"

# One build at a time: an exclusive lock on `.build.lock` (hidden, like `.installed`, so a
# plugin watcher on this directory does not take it for a plugin), held until the script
# exits. flock(1) where there is one; macOS has none, and there perl's flock takes the same
# lock on the same open file. With neither, the build runs unlocked.
exec 9>.build.lock
if command -v flock >/dev/null 2>&1; then
    flock 9
elif command -v perl >/dev/null 2>&1; then
    perl -MFcntl=:flock -e 'open(my $lock, ">&=", 9) or die "$!\n"; flock($lock, LOCK_EX) or die "$!\n"'
else
    echo "$0: neither flock nor perl is installed; building without a lock" >&2
fi
mkdir -p .installed

# sha256sum, or on macOS `shasum -a 256`, which prints the same.
if command -v sha256sum >/dev/null 2>&1; then
    sha256() { sha256sum; }
else
    sha256() { shasum -a 256; }
fi

target=wasm32-unknown-unknown
if ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target"
fi
cargo build --quiet --locked --release --target "$target"
for plugin in text-tools http-fetch call-guard; do
    module="${plugin//-/_}.wasm"
    # Unchanged modules stay untouched (a watcher would reload them); changed ones are
    # copied, then renamed, so a watcher never sees half a module.
    if cmp -s "target/$target/release/$module" "$plugin/$module"; then
        continue
    fi
    cp "target/$target/release/$module" "$plugin/.$module.tmp"
    mv "$plugin/.$module.tmp" "$plugin/$module"
done

bash ../../sdk/node/build.sh
sdk="$(cat ../../sdk/node/.built)"
for plugin in weather-node notes-node echo-bridge; do
    stamp="$(cat "$plugin/package.json" "$plugin/package-lock.json" | sha256 | cut -d' ' -f1) $sdk"
    if [ -f ".installed/$plugin" ] && [ "$(cat ".installed/$plugin")" = "$stamp" ] \
        && [ -d "$plugin/node_modules/@aleph/plugin-sdk" ]; then
        continue
    fi
    (cd "$plugin" && npm ci --install-links --no-audit --no-fund --loglevel=error)
    echo "$stamp" > ".installed/$plugin"
done
