//! Compile-time tests of `#[tool]`.
