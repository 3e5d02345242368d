//! Tools made from the other tools: a derived tool's definition is remade from the
//! definitions the filter offers whenever the tool set or the filter changes, in the same
//! change (code mode's `code` tool carries the typed API of the tools code may call), and
//! the tools the application opens to code.

use std::sync::Arc;

use super::filter::CompiledFilter;
use super::table::{Entry, Table};
use super::{AlephToolServer, Settings};
use crate::context::Caller;
use crate::server::RegistryError;
use crate::tool::{AlephToolDyn, ToolDefinition};

/// Makes a derived tool from the definitions of the tools the filter offers (sorted by
/// name, derived tools left out).
pub(crate) type Derive = Arc<dyn Fn(&[Arc<ToolDefinition>]) -> Arc<dyn AlephToolDyn> + Send + Sync>;

/// A tool remade from the others, by name.
pub(crate) struct DerivedTool {
    pub(super) name: String,
    pub(super) derive: Derive,
}

impl DerivedTool {
    #[cfg_attr(not(feature = "builtin"), allow(dead_code))]
    pub(crate) fn new(name: impl Into<String>, derive: Derive) -> Self {
        Self {
            name: name.into(),
            derive,
        }
    }
}

impl Settings {
    /// Gives code the right to call `entry` when the application opened it to code and
    /// its own definition does not already.
    pub(super) fn open_to_code(&self, entry: &mut Entry) {
        // A tool made from the others (code mode's own) is never opened: a script could
        // then start scripts.
        if self.open_to_code.is_match(&entry.name)
            && !self.derived.iter().any(|d| *d.name == *entry.name)
            && !entry.definition.allows_caller(Caller::CodeExecution)
        {
            let mut definition = ToolDefinition::clone(&entry.definition);
            if definition.allowed_callers.is_empty() {
                definition.allowed_callers.push(Caller::Human);
            }
            definition.allowed_callers.push(Caller::CodeExecution);
            entry.definition = Arc::new(definition);
        }
    }

    /// Remakes each derived tool still in `table` from the tools `filter` offers; an entry
    /// whose definition comes out the same is kept. Reports whether `table` changed.
    pub(super) fn refresh_derived(
        &self,
        table: &mut Table,
        filter: &CompiledFilter,
    ) -> Result<bool, RegistryError> {
        if self.derived.is_empty() {
            return Ok(false);
        }
        let mut offered: Vec<Arc<ToolDefinition>> = table
            .values()
            .filter(|entry| !self.derived.iter().any(|d| *d.name == *entry.name))
            .filter(|entry| filter.offers(&entry.name))
            .map(|entry| Arc::clone(&entry.definition))
            .collect();
        offered.sort_by(|a, b| a.name.cmp(&b.name));
        let mut changed = false;
        for derived in &self.derived {
            let Some(current) = table.get(derived.name.as_str()) else {
                continue;
            };
            let tool = (derived.derive)(&offered);
            let entry = self.entry(tool)?;
            if *entry.definition != *current.definition {
                table.insert(Arc::clone(&entry.name), Arc::new(entry));
                changed = true;
            }
        }
        Ok(changed)
    }
}

impl AlephToolServer {
    /// Remakes the derived tools in `table` for `filter`; a failure keeps the tools as they
    /// were and is logged (a derived tool's maker is the library's own code).
    pub(super) fn refresh_derived(&self, table: &mut Table, filter: &CompiledFilter) -> bool {
        match self.shared.settings.refresh_derived(table, filter) {
            Ok(changed) => changed,
            Err(error) => {
                tracing::warn!("a tool made from the other tools could not be remade: {error}");
                false
            }
        }
    }
}
