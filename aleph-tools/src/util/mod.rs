//! The crate's helpers: small pieces several modules share that are not a concept of the
//! library's own (locks that survive a panic, tool-name and host rules, process groups,
//! file watching, output compression).

pub(crate) mod compress;
#[cfg(any(feature = "plugins", feature = "builtin", feature = "sandbox"))]
pub(crate) mod hosts;
pub(crate) mod names;
pub(crate) mod patterns;
#[cfg(any(feature = "node", feature = "builtin"))]
pub(crate) mod process;
#[cfg(any(feature = "plugins", feature = "builtin"))]
pub(crate) mod regular_file;
pub(crate) mod sync;
#[cfg(any(feature = "plugins", feature = "builtin"))]
pub(crate) mod watch;

use std::pin::Pin;

/// A boxed, sendable future, as [`AlephToolDyn::call`](crate::AlephToolDyn::call) returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
