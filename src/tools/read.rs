//! `read`: a text file with numbered lines, so the model can cite `path:N-M` exactly.

use serde_json::Value;

use super::{opt_usize, resolve, str_arg, ToolContext, ToolError, ToolOutput};

/// Lines returned when the call gives no `limit`.
pub const DEFAULT_LIMIT: usize = 2000;
/// Longer lines are cut (and marked) so one minified file cannot flood the context.
pub const MAX_LINE_CHARS: usize = 2000;

/// How the output of a read that stopped before the file's end says where to go on.
const READ_ON: &str = "read on with offset ";

/// The offset `output` (of this tool) says to read on from: `None` when it reached the end of
/// the file. Beside the note's writer, so the two cannot drift apart.
pub fn read_on_offset(output: &str) -> Option<usize> {
    let line = output.lines().last()?;
    line.split(READ_ON)
        .nth(1)?
        .trim_end_matches(')')
        .trim()
        .parse()
        .ok()
}

pub fn run(ctx: ToolContext<'_>, args: &Value) -> Result<ToolOutput, ToolError> {
    let name = str_arg("read", args, "path")?;
    let offset = opt_usize("read", args, "offset")?.unwrap_or(1);
    let limit = opt_usize("read", args, "limit")?.unwrap_or(DEFAULT_LIMIT);
    let path = resolve(ctx, "read", name)?;
    if path.is_dir() {
        return Err(ToolError::BadArguments {
            tool: "read".into(),
            message: format!("`{name}` is a directory; use `list`"),
        });
    }
    let bytes = std::fs::read(&path).map_err(|e| ToolError::Failed {
        tool: "read".into(),
        message: format!("{name}: {e}"),
    })?;
    let text = String::from_utf8(bytes).map_err(|_| ToolError::Failed {
        tool: "read".into(),
        message: format!("{name} is not UTF-8 text"),
    })?;
    let total = text.lines().count();
    let mut out = String::with_capacity(text.len().min(1 << 20) + limit * 8);
    for (i, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        let shown = match line.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => format!("{}… [line cut]", &line[..cut]),
            None => line.to_string(),
        };
        out.push_str(&format!("{:>6}\t{}\n", i + 1, shown));
    }
    let last = (offset - 1 + limit).min(total);
    if total == 0 {
        out.push_str("(empty file)\n");
    } else if offset > total {
        out.push_str(&format!(
            "(the file has {total} lines; offset {offset} is past the end)\n"
        ));
    } else if last < total {
        out.push_str(&format!(
            "(lines {offset}-{last} of {total}; {READ_ON}{})\n",
            last + 1
        ));
    }
    Ok(ToolOutput::text(out))
}
