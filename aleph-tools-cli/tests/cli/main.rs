//! The `aleph-tools` command, run as a built binary, in one test binary: each module is one
//! area of the command (`cargo test -p aleph-tools-cli --all-features --test cli security::`
//! runs one of them).

mod chat;
mod clients;
mod command;
mod manage;
mod output;
mod replicas;
mod scaffold;
mod security;
mod shell;
