//! End-to-end tests of aleph-tools; the tests live under `tests/`, the book is compiled here.

/// The guide's pages, compiled and run as doctests: every Rust snippet in `book/` must work.
#[cfg(doctest)]
mod book {
    #[doc = include_str!("../../book/src/introduction.md")]
    mod introduction {}

    #[doc = include_str!("../../book/src/getting-started.md")]
    mod getting_started {}

    #[doc = include_str!("../../book/src/writing-tools.md")]
    mod writing_tools {}

    #[doc = include_str!("../../book/src/server.md")]
    mod server {}

    #[doc = include_str!("../../book/src/repair.md")]
    mod repair {}

    #[doc = include_str!("../../book/src/arguments.md")]
    mod arguments {}

    #[doc = include_str!("../../book/src/filters.md")]
    mod filters {}

    #[doc = include_str!("../../book/src/context.md")]
    mod context {}

    #[doc = include_str!("../../book/src/middleware.md")]
    mod middleware {}

    #[doc = include_str!("../../book/src/providers.md")]
    mod providers {}
}

/// The README's quick start, compiled and run like the guide.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
mod readme {}
