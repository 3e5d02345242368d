//! One runnable program per chapter of the aleph-tools guide, under `src/bin/`:
//! `cargo run -p guide-examples --bin <chapter>`.
