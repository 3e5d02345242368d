//! End-to-end tests of aleph-tools; the tests live under `tests/`, the book is compiled here.
