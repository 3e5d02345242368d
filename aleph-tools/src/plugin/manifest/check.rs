//! The rules a parsed manifest must follow, and the files it names, checked all at once so
//! every problem is reported together.

use std::collections::HashSet;
use std::path::Path;

use super::permissions::{inside, parse_filesystem};
use super::read::toml_position;
use super::{LoadedManifest, ManifestError, ManifestProblem, PLUGIN_API_VERSION, PluginKind};
use crate::util::hosts::parse_rule as parse_network;
use crate::util::names::check_tool_name;

impl LoadedManifest {
    /// Checks the rules a parsed manifest must follow and the files it names. `text` is the
    /// file's text, used to place problems in TOML files.
    pub(super) fn check(&self, text: &str) -> Result<(), ManifestError> {
        let mut problems = Vec::new();
        let mut add = |key: String, message: String| problems.push((key, message));
        self.check_plugin(&mut add);
        self.check_tools(&mut add);
        self.check_handlers(&mut add);
        if problems.is_empty() {
            return Ok(());
        }
        let is_toml = self.file.extension().is_some_and(|e| e == "toml");
        Err(ManifestError {
            file: self.file.clone(),
            problems: problems
                .into_iter()
                .map(|(key, message)| ManifestProblem {
                    position: if is_toml {
                        toml_position(text, &key)
                    } else {
                        None
                    },
                    key,
                    message,
                })
                .collect(),
        })
    }

    /// `[plugin]`, `[permissions]` and `[prompt]`.
    fn check_plugin(&self, add: &mut impl FnMut(String, String)) {
        let m = &self.manifest;
        let info = &m.plugin;

        if !is_valid_id(&info.id) {
            add(
                "plugin.id".into(),
                format!(
                    "`{}` is not a valid id; use a lowercase letter followed by up to 63 of `a-z 0-9 - _ .`",
                    info.id
                ),
            );
        }
        if let Some(range) = &info.api_version
            && !range.matches(&PLUGIN_API_VERSION)
        {
            add(
                "plugin.api_version".into(),
                format!(
                    "the plugin needs plugin API `{range}`, and this host implements {PLUGIN_API_VERSION}; update the host or the plugin"
                ),
            );
        }
        match (info.kind, &info.entry) {
            (PluginKind::Static, Some(_)) => add(
                "plugin.entry".into(),
                "a `static` plugin runs no code; remove `entry` or change `kind`".into(),
            ),
            (PluginKind::Static, None) => {
                for (key, declared) in [
                    ("tools", !m.tools.is_empty()),
                    ("hooks", !m.hooks.is_empty()),
                    ("commands", !m.commands.is_empty()),
                    ("services", !m.services.is_empty()),
                    ("http_routes", !m.http_routes.is_empty()),
                    ("channels", !m.channels.is_empty()),
                    ("providers", !m.providers.is_empty()),
                ] {
                    if declared {
                        add(
                            key.into(),
                            format!(
                                "a `static` plugin runs no code, so it cannot have {key}; set `kind = \"wasm\"` and an `entry`"
                            ),
                        );
                    }
                }
            }
            (kind, None) => add(
                "plugin.entry".into(),
                format!("a `{kind}` plugin needs `entry`, the file to run, such as `plugin.wasm`"),
            ),
            (_, Some(entry)) => self.check_file("plugin.entry", entry, add),
        }

        for (i, rule) in m.permissions.network.iter().enumerate() {
            if let Err(message) = parse_network(rule) {
                add(format!("permissions.network[{i}]"), message);
            }
        }
        for (i, rule) in m.permissions.filesystem.iter().enumerate() {
            if let Err(message) = parse_filesystem(rule, &self.dir) {
                add(format!("permissions.filesystem[{i}]"), message);
            }
        }
        for (i, name) in m.permissions.env.iter().enumerate() {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                add(
                    format!("permissions.env[{i}]"),
                    format!("`{name}` is not an environment variable name; use `A-Z 0-9 _`"),
                );
            }
        }
        if m.permissions.child_process && info.kind != PluginKind::Nodejs {
            add(
                "permissions.child_process".into(),
                format!(
                    "only a `nodejs` plugin can start processes; remove it from this `{}` plugin",
                    info.kind
                ),
            );
        }
        if let Some(prompt) = &m.prompt {
            self.check_file("prompt.file", &prompt.file, add);
        }
    }

    /// `[[tools]]`.
    fn check_tools(&self, add: &mut impl FnMut(String, String)) {
        let m = &self.manifest;
        let mut names = HashSet::new();
        for (i, tool) in m.tools.iter().enumerate() {
            let key = format!("tools[{i}]");
            if let Err(rule) = check_tool_name(&tool.name) {
                add(format!("{key}.name"), rule);
            } else if !names.insert(tool.name.as_str()) {
                add(
                    format!("{key}.name"),
                    format!("`{}` is declared twice; tool names must differ", tool.name),
                );
            }
            if tool.description.trim().is_empty() {
                add(
                    format!("{key}.description"),
                    "is empty; say what the tool does, for the model".into(),
                );
            }
            if tool.title.as_ref().is_some_and(|t| t.trim().is_empty()) {
                add(
                    format!("{key}.title"),
                    "is empty; give a name for people, or leave `title` out".into(),
                );
            }
            for (j, icon) in tool.icons.iter().enumerate() {
                if !(icon.src.starts_with("https://") || icon.src.starts_with("data:")) {
                    add(
                        format!("{key}.icons[{j}].src"),
                        format!("`{}` is not an `https:` or `data:` URL", icon.src),
                    );
                }
            }
            if let Some(handler) = &tool.handler
                && !is_valid_export(handler)
            {
                add(
                    format!("{key}.handler"),
                    format!("`{handler}` is not a function name"),
                );
            }
            if let Some(path) = &tool.instruction_file {
                self.check_file(&format!("{key}.instruction_file"), path, add);
            }
            for (field, source) in [
                ("input_schema", &tool.input_schema),
                ("output_schema", &tool.output_schema),
            ] {
                let Some(source) = source else { continue };
                match self.read_schema(source) {
                    Ok(schema) if field == "input_schema" && !crate::schema::is_object_schema(&schema) => add(
                        format!("{key}.{field}"),
                        "must describe an object (`type = \"object\"` with `properties`); tool arguments are always an object".into(),
                    ),
                    Ok(schema) if !(schema.is_object() || schema.is_boolean()) => add(
                        format!("{key}.{field}"),
                        "is not a JSON Schema (an object)".into(),
                    ),
                    Ok(_) => {}
                    Err(message) => add(format!("{key}.{field}"), message),
                }
            }
        }
    }

    /// Hooks, commands, services, channels, providers and HTTP routes.
    fn check_handlers(&self, add: &mut impl FnMut(String, String)) {
        let m = &self.manifest;
        let mut handlers: Vec<(String, &str)> = Vec::new();
        for (i, hook) in m.hooks.iter().enumerate() {
            handlers.push((format!("hooks[{i}].handler"), &hook.handler));
        }
        let mut commands = HashSet::new();
        for (i, command) in m.commands.iter().enumerate() {
            if command.name.is_empty() || !commands.insert(command.name.as_str()) {
                add(
                    format!("commands[{i}].name"),
                    format!("`{}` is empty or declared twice", command.name),
                );
            }
            handlers.push((format!("commands[{i}].handler"), &command.handler));
        }
        for (i, service) in m.services.iter().enumerate() {
            handlers.push((
                format!("services[{i}].start_handler"),
                &service.start_handler,
            ));
            handlers.push((format!("services[{i}].stop_handler"), &service.stop_handler));
        }
        for (i, channel) in m.channels.iter().enumerate() {
            handlers.push((
                format!("channels[{i}].connect_handler"),
                &channel.connect_handler,
            ));
            handlers.push((
                format!("channels[{i}].disconnect_handler"),
                &channel.disconnect_handler,
            ));
            handlers.push((format!("channels[{i}].send_handler"), &channel.send_handler));
        }
        for (i, provider) in m.providers.iter().enumerate() {
            handlers.push((
                format!("providers[{i}].list_models_handler"),
                &provider.list_models_handler,
            ));
            handlers.push((
                format!("providers[{i}].chat_handler"),
                &provider.chat_handler,
            ));
        }
        for (i, route) in m.http_routes.iter().enumerate() {
            if !matches!(
                route.method.as_str(),
                "GET" | "POST" | "PUT" | "PATCH" | "DELETE"
            ) {
                add(
                    format!("http_routes[{i}].method"),
                    format!(
                        "`{}` is not one of GET, POST, PUT, PATCH, DELETE",
                        route.method
                    ),
                );
            }
            if !route.path.starts_with('/') {
                add(
                    format!("http_routes[{i}].path"),
                    format!("`{}` must start with `/`", route.path),
                );
            } else if let Some(bad) = route.path.split('/').find(|segment| {
                (segment.contains('{') || segment.contains('}'))
                    && !segment
                        .strip_prefix('{')
                        .and_then(|s| s.strip_suffix('}'))
                        .is_some_and(|name| {
                            !name.is_empty()
                                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                        })
            }) {
                add(
                    format!("http_routes[{i}].path"),
                    format!(
                        "`{bad}` in `{}` is not a parameter; a segment is text, or `{{name}}` alone",
                        route.path
                    ),
                );
            }
            if m.http_routes[..i]
                .iter()
                .any(|r| r.method == route.method && r.path == route.path)
            {
                add(
                    format!("http_routes[{i}]"),
                    format!("`{} {}` is declared twice", route.method, route.path),
                );
            }
            handlers.push((format!("http_routes[{i}].handler"), &route.handler));
        }
        for (key, handler) in handlers {
            if !is_valid_export(handler) {
                add(key, format!("`{handler}` is not a function name"));
            }
        }
    }

    fn check_file(&self, key: &str, path: &Path, add: &mut impl FnMut(String, String)) {
        let Some(relative) = inside(path) else {
            add(
                key.to_owned(),
                format!(
                    "`{}` is outside the plugin's directory; name a file inside it",
                    path.display()
                ),
            );
            return;
        };
        let full = self.dir.join(relative);
        if !full.is_file() {
            add(
                key.to_owned(),
                format!(
                    "`{}` does not exist; build the plugin or fix the path",
                    full.display()
                ),
            );
        }
    }
}

fn is_valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && id.len() <= 64
        && chars
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'))
}

fn is_valid_export(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 256
        && !name.chars().any(|c| c.is_control() || c.is_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_rules() {
        assert!(is_valid_id("text-tools.v2_x"));
        for bad in ["", "Text", "1x", "a b", "a/b", &"a".repeat(65)] {
            assert!(!is_valid_id(bad), "{bad}");
        }
    }
}
