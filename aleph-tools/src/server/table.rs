//! The tool table and its writers: what a served tool is ([`Entry`]), the checks a tool
//! passes before it is served, and `add`, `replace` and `remove`.

use std::collections::HashMap;
use std::sync::Arc;

use super::{AlephToolServer, Snapshot};
use crate::provider::ToolListError;
use crate::schema::{self, ArgumentValidator};
use crate::server::RegistryError;
use crate::tool::{AlephToolDyn, RunInline, ToolDefinition};
use crate::util::names::check_tool_name;
use crate::util::sync::lock;

/// One served tool with its definition and compiled input schema, built once when the tool
/// was added.
pub(super) struct Entry {
    pub(super) name: Arc<str>,
    pub(super) tool: Arc<dyn AlephToolDyn>,
    pub(super) definition: Arc<ToolDefinition>,
    pub(super) validator: ArgumentValidator,
    /// For a typed tool whose arguments serde checks in full, as the schema would (see
    /// [`schema::serde_enforces`]), how a call reads its arguments straight from the
    /// caller's value; the validator then runs only when serde refuses. `None` for the rest.
    pub(super) fast: Option<FastPath>,
    /// What the server's providers cannot take of it (see `providers`).
    pub(super) incompatible: Vec<ToolListError>,
}

/// A typed tool's fast path: it reads its arguments itself (`TypedArguments::prepare`), or
/// runs in place when it is inline.
#[derive(Clone, Copy)]
pub(super) struct FastPath {
    /// For an inline tool, how a call without a time limit runs in place: with the caller's
    /// context as it is when the tool never reads it (whatever that context carries), with
    /// the call's when it does (and then only with no cancellation token or progress
    /// listener either).
    pub(super) run_inline: Option<RunInline>,
    /// Whether the tool reads its context, which must then be prepared in full.
    pub(super) reads_context: bool,
}

impl FastPath {
    /// How a call runs in place with the caller's context as it came: for an inline tool
    /// that never reads its context.
    pub(super) fn without_context(self) -> Option<RunInline> {
        self.run_inline.filter(|_| !self.reads_context)
    }
}

/// Name → tool. Lookups hash a short name per call, so a fast hasher pays off.
pub(super) type Table = HashMap<Arc<str>, Arc<Entry>, foldhash::fast::RandomState>;

/// What [`AlephToolServer::replace`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplaceInfo {
    /// The name of the tool now served.
    pub tool_name: String,
    /// Whether a tool of that name was served before and is now replaced.
    pub was_replaced: bool,
}

/// `tool`'s entry, when its name and definition can be offered to a model.
pub(super) fn checked_entry(tool: Arc<dyn AlephToolDyn>) -> Result<Entry, RegistryError> {
    let definition = Arc::new(tool.definition());
    let name = &definition.name;
    let invalid = |reason: String| RegistryError::InvalidDefinition {
        name: name.clone(),
        reason,
    };
    check_tool_name(name).map_err(invalid)?;
    if tool.name() != name {
        return Err(invalid(format!(
            "`name()` says `{}` but `definition().name` says `{name}`; they must agree",
            tool.name()
        )));
    }
    if !schema::is_object_schema(&definition.parameters) {
        return Err(invalid(
            "the input schema's root must be `\"type\": \"object\"` (arguments are named); take a struct as arguments"
                .to_owned(),
        ));
    }
    check_strict(&definition)?;
    let fast = tool
        .typed_arguments()
        .filter(|typed| {
            *typed.own_schema() == definition.parameters
                && schema::serde_enforces(&definition.parameters)
        })
        .map(|typed| FastPath {
            run_inline: typed.inline_runner(),
            reads_context: typed.reads_context(),
        });
    let validator =
        ArgumentValidator::new(&definition.parameters, fast.is_some()).map_err(invalid)?;
    Ok(Entry {
        name: Arc::from(name.as_str()),
        tool,
        definition,
        validator,
        fast,
        incompatible: Vec::new(),
    })
}

impl super::Settings {
    /// `tool`'s entry when this server can serve it: a valid definition (with the callers
    /// the application opened it to), the state it takes given to the builder, and (unless
    /// the policy skips misfits) a schema every provider of the server takes.
    pub(super) fn entry(&self, tool: Arc<dyn AlephToolDyn>) -> Result<Entry, RegistryError> {
        let mut entry = checked_entry(tool)?;
        self.adopt(&mut entry)?;
        Ok(entry)
    }

    /// Applies the server's settings to a checked entry: opens it to code, defers it,
    /// checks its state and the providers.
    pub(super) fn adopt(&self, entry: &mut Entry) -> Result<(), RegistryError> {
        self.open_to_code(entry);
        self.defer(entry);
        self.check_state(entry)?;
        self.quarantine.check(entry)
    }
}

/// A tool marked `strict` must have a schema OpenAI's strict mode takes.
fn check_strict(definition: &ToolDefinition) -> Result<(), RegistryError> {
    if !definition.strict {
        return Ok(());
    }
    let strict = schema::Dialect::OpenAi { strict: true };
    strict
        .apply(&definition.parameters)
        .map(drop)
        .map_err(|err| RegistryError::InvalidDefinition {
            name: definition.name.clone(),
            reason: format!("the tool is marked `strict`, but its schema cannot be: {err}"),
        })
}

/// What a change to the tool table returns: whether it changed anything.
trait TableChange {
    fn changed(&self) -> bool;
}

/// `remove`: whether a tool was there.
impl TableChange for bool {
    fn changed(&self) -> bool {
        *self
    }
}

/// A change that may be refused, leaving the table as it was.
impl<T> TableChange for Result<T, RegistryError> {
    fn changed(&self) -> bool {
        self.is_ok()
    }
}

impl AlephToolServer {
    /// `tool`'s entry when this server can serve it: a valid definition, the state it takes
    /// given to the builder, and (unless the policy skips misfits) a schema every provider
    /// of the server takes.
    fn served_entry(&self, tool: Arc<dyn AlephToolDyn>) -> Result<Entry, RegistryError> {
        self.shared.settings.entry(tool)
    }

    /// Runs `change` on a copy of the table and swaps the copy in when `change` reports that
    /// it changed something.
    fn write<R: TableChange>(&self, change: impl FnOnce(&mut Table) -> R) -> R {
        let _writer = lock(&self.shared.write);
        let mut snapshot = Snapshot::clone(&self.shared.snapshot.load());
        let out = change(&mut snapshot.tools);
        if out.changed() {
            self.refresh_derived(&mut snapshot.tools, &self.shared.filter.load().compiled);
            self.shared.publish(snapshot);
            self.shared.changes.send_modify(|count| *count += 1);
        }
        out
    }

    /// Removes the tools named in `remove` and adds `add`, as one change: calls see either
    /// the old set or the new one. Nothing changes when one of `add` cannot be served or its
    /// name is taken by a tool not in `remove`.
    #[cfg(any(feature = "plugins", feature = "mcp", feature = "builtin"))]
    pub(crate) fn swap_tools(
        &self,
        remove: &[String],
        add: Vec<Arc<dyn AlephToolDyn>>,
    ) -> Result<(), RegistryError> {
        let entries = add
            .into_iter()
            .map(|tool| self.served_entry(tool))
            .collect::<Result<Vec<_>, _>>()?;
        self.write(|table| {
            if let Some(taken) = entries.iter().find(|entry| {
                table.contains_key(&entry.name) && !remove.iter().any(|r| **r == *entry.name)
            }) {
                return Err(RegistryError::AlreadyServed {
                    name: taken.name.to_string(),
                });
            }
            for name in remove {
                table.remove(name.as_str());
            }
            for entry in entries {
                table.insert(Arc::clone(&entry.name), Arc::new(entry));
            }
            Ok(())
        })
    }

    /// Serves one more tool: a `#[tool]`'s `…Tool`, a hand-written [`AlephToolDyn`], or an
    /// `Arc<dyn AlephToolDyn>` built at run time. Calls that start afterwards can reach it.
    ///
    /// # Errors
    ///
    /// [`RegistryError::AlreadyServed`] when the name is taken (use
    /// [`replace`](Self::replace) to swap it); [`RegistryError::InvalidDefinition`] when the
    /// name or schema is unusable; [`RegistryError::MissingState`] when it takes state the
    /// builder was not given.
    pub fn add(&self, tool: impl AlephToolDyn) -> Result<(), RegistryError> {
        let entry = self.served_entry(Arc::new(tool))?;
        self.write(|table| {
            if table.contains_key(&entry.name) {
                return Err(RegistryError::AlreadyServed {
                    name: entry.name.to_string(),
                });
            }
            table.insert(Arc::clone(&entry.name), Arc::new(entry));
            Ok(())
        })
    }

    /// Serves `tool`, replacing the tool of the same name if there is one. Calls already
    /// running finish on the tool they started on.
    ///
    /// # Errors
    ///
    /// As [`add`](Self::add), but for the name being taken; nothing is replaced then.
    pub fn replace(&self, tool: impl AlephToolDyn) -> Result<ReplaceInfo, RegistryError> {
        let entry = self.served_entry(Arc::new(tool))?;
        let tool_name = entry.name.to_string();
        let was_replaced = self.write(|table| {
            Ok::<_, RegistryError>(
                table
                    .insert(Arc::clone(&entry.name), Arc::new(entry))
                    .is_some(),
            )
        })?;
        Ok(ReplaceInfo {
            tool_name,
            was_replaced,
        })
    }

    /// Stops serving the tool called `name`; returns whether there was one. Calls already
    /// running finish.
    pub fn remove(&self, name: &str) -> bool {
        if !self.shared.snapshot.load().tools.contains_key(name) {
            return false;
        }
        self.write(|table| table.remove(name).is_some())
    }
}
