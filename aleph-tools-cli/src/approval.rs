//! Who approves the calls that need confirmation: nobody, everyone, or the tools named with
//! `--yes` and, for the rest, the person at the terminal.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::sync::Arc;

use aleph_tools::{Confirmation, ConfirmationRequest, ToolServerBuilder};

/// How calls that need confirmation are decided.
pub enum Approval {
    /// They are refused: nobody can be asked.
    Refuse,
    /// They are approved, every one.
    All,
    /// Those of the named tools (names, or patterns ending in `*`) are approved; the others
    /// are put to the person at the terminal, or refused when standard input is not one.
    Named(Vec<String>),
}

impl Approval {
    /// Every call approved when `yes`, else none.
    pub fn when(yes: bool) -> Self {
        if yes { Self::All } else { Self::Refuse }
    }

    /// `builder` with the confirmation handler this approval stands for.
    pub fn install(self, builder: ToolServerBuilder) -> ToolServerBuilder {
        match self {
            Self::Refuse => builder,
            Self::All => builder.with_confirmation_handler(|_: ConfirmationRequest| async {
                Confirmation::Approve
            }),
            Self::Named(patterns) => {
                let patterns: Arc<[String]> = patterns.into();
                let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
                // One question at a time: calls of one turn run concurrently.
                let asking = Arc::new(tokio::sync::Mutex::new(()));
                builder.with_confirmation_handler(move |request: ConfirmationRequest| {
                    let patterns = Arc::clone(&patterns);
                    let asking = Arc::clone(&asking);
                    async move {
                        if patterns
                            .iter()
                            .any(|pattern| covers(pattern, &request.tool))
                        {
                            return Confirmation::Approve;
                        }
                        if !terminal {
                            return Confirmation::deny(format!(
                                "`{tool}` needs the user's approval and nobody could be asked; \
                                 the user can run the command again with `--yes={tool}`",
                                tool = request.tool
                            ));
                        }
                        let _turn = asking.lock().await;
                        tokio::task::spawn_blocking(move || ask(&request))
                            .await
                            .unwrap_or_else(|_| {
                                Confirmation::deny("the question could not be asked")
                            })
                    }
                })
            }
        }
    }
}

/// Whether `pattern` (a name, a prefix ending in `*`, or `*`) names `tool`.
fn covers(pattern: &str, tool: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => tool.starts_with(prefix),
        None => pattern == tool,
    }
}

/// The longest arguments put to the person, in characters; longer ones are refused unseen.
const MAX_SHOWN: usize = 4_000;

/// Puts the call to the person at the terminal, its arguments shown whole (JSON, so control
/// characters are escaped and cannot redraw the line): yes only when they type it.
fn ask(request: &ConfirmationRequest) -> Confirmation {
    let arguments = request.arguments.to_string();
    let length = arguments.chars().count();
    if length > MAX_SHOWN {
        return Confirmation::deny(format!(
            "the arguments of `{}` are {length} characters, too long to show the user for \
             approval (at most {MAX_SHOWN}); make the call smaller",
            request.tool
        ));
    }
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "Run {}({arguments})? [y/N] ", request.tool);
    let _ = err.flush();
    drop(err);
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(_) if matches!(line.trim(), "y" | "Y" | "yes" | "Yes") => Confirmation::Approve,
        _ => Confirmation::deny(format!("the user declined to run `{}`", request.tool)),
    }
}

#[cfg(test)]
mod tests {
    use super::covers;

    #[test]
    fn patterns_name_tools() {
        assert!(covers("bash", "bash"));
        assert!(!covers("bash", "bash2"));
        assert!(covers("file_*", "file_write"));
        assert!(!covers("file_*", "bash"));
        assert!(covers("*", "anything"));
    }
}
