//! The management API as tools: one per method, named as the method is with `_` for `.`
//! and for each capital (`plugins.executeCommand` is `plugins_execute_command`).

use serde_json::Value;

use super::methods::{Kind, SPECS, Spec};
use super::{AdminError, PluginAdmin};
use crate::context::ToolContext;
use crate::error::{ArgumentProblem, ToolError};
use crate::result::ToolOutput;
use crate::tool::{
    AlephToolDyn, BoxFuture, RuntimeTool, ToolAnnotations, ToolDefinition, ToolHandler,
};

impl PluginAdmin {
    /// The methods as tools, to add to a server with
    /// [`AlephToolServer::add`](crate::AlephToolServer::add): `plugins_list`,
    /// `plugins_install`, …, `services_stop`, each with its params as its schema and hints
    /// (read-only, destructive) as the method has them.
    ///
    /// A call that carries an identity runs only when the identity holds the
    /// [scope](Self::with_scope); a call without one runs. Serve them where whoever calls is
    /// trusted with the plugins, such as to the one client of a stdio server; over HTTP,
    /// [`router`](Self::router) serves the same methods behind the scope. A model steered by
    /// what it reads could install what it is told to: `plugins_install` downloads only from
    /// hosts [`with_download_hosts`](Self::with_download_hosts) sets, and from none unless
    /// they are set.
    pub fn tools(&self) -> Vec<impl AlephToolDyn + use<>> {
        SPECS
            .iter()
            .map(|spec| {
                let annotations = ToolAnnotations {
                    read_only: Some(spec.read_only),
                    destructive: Some(spec.destructive),
                    ..ToolAnnotations::NONE
                };
                let definition =
                    ToolDefinition::new(tool_name(spec.method), spec.description, spec.schema())
                        .with_annotations(annotations);
                RuntimeTool::new(
                    definition,
                    Method {
                        admin: self.clone(),
                        spec,
                    },
                )
            })
            .collect()
    }
}

/// One method, run as a tool.
struct Method {
    admin: PluginAdmin,
    spec: &'static Spec,
}

impl ToolHandler for Method {
    fn call<'a>(
        &'a self,
        definition: &'a ToolDefinition,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let scope = self.admin.scope();
            if let Some(identity) = ctx.identity()
                && !identity.has_scope(scope)
            {
                return Err(ToolError::permission_denied(
                    definition.name.clone(),
                    format!(
                        "`{}` lacks the scope `{scope}` the plugin manager's tools need",
                        identity.subject()
                    ),
                ));
            }
            let downloads = args["source"].as_str().is_some_and(|s| s.contains("://"));
            if self.spec.kind == Kind::Install
                && downloads
                && self.admin.inner.downloads.hosts.is_none()
            {
                return Err(ToolError::permission_denied(
                    definition.name.clone(),
                    "installing from a URL through a tool needs the hosts to download from set by the server (`with_download_hosts`, or `download_hosts` in the command's `[admin]`); none are",
                ));
            }
            match self.admin.call(self.spec.method, args).await {
                Ok(result) => Ok(ToolOutput::json(result)),
                Err(AdminError::InvalidParams {
                    expected, problem, ..
                }) => Err(ToolError::invalid_args(
                    definition.name.clone(),
                    [ArgumentProblem::new("", expected).received(problem)],
                )),
                Err(error) => Err(ToolError::execution(error)),
            }
        })
    }
}

/// `plugins.executeCommand` → `plugins_execute_command`.
fn tool_name(method: &str) -> String {
    let mut name = String::with_capacity(method.len() + 4);
    for c in method.chars() {
        match c {
            '.' => name.push('_'),
            c if c.is_ascii_uppercase() => {
                name.push('_');
                name.push(c.to_ascii_lowercase());
            }
            c => name.push(c),
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_named_for_their_methods() {
        assert_eq!(
            tool_name("plugins.executeCommand"),
            "plugins_execute_command"
        );
        assert_eq!(tool_name("services.list"), "services_list");
    }
}
