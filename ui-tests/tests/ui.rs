//! Compile-time behaviour of `#[tool]`: every `pass/` case builds and runs, every `fail/`
//! case fails with exactly its `.stderr`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("pass/*.rs");
    t.compile_fail("fail/*.rs");
}
