//! An excerpt never opens on a line that an earlier excerpt of the same answer quoted, and an
//! item whose title one line of the file states cites that line ([`number_guard`]).
//!
//! The grammar makes each excerpt of a quotable file a run of that file's lines, but GBNF
//! cannot remember which runs the answer has already written. The 1.5B planner's `scope` step
//! quoted `pub struct Args {` and the lines after it in two items; the step check refused the
//! repeat (`is cited by an item before it`), and the model sent the identical call twice more
//! and gave up. Like the citation range guard ([`super::sample`]), this reads the answer so
//! far and refuses a token that would make the excerpt being written open on a line an
//! earlier excerpt of the same file covers. Only the opening line is held: an excerpt may run
//! on into lines already quoted, as the checkers allow.
//!
//! The excerpt is read whole, not by its first line alone: a file can hold one line twice
//! (`impl RetryPolicy {` at lines 43 and 79 of `src/model/retry.rs`), and the 1.5B planner,
//! free to open on the second copy, ran on into the first copy's next line, so its `scope`
//! repeated one run three times. An excerpt is admitted only while it is, as far as written,
//! the start of a run of lines that opens on a free line; an earlier excerpt covers every run
//! it matches.
//!
//! A JSON `"excerpt"` string (after its object's `"path"`) is held as it is written. The
//! envelope's fenced block is tied to the reference before it (`- **Evidence**: `path:N-M``,
//! see `grammar::tied_cites`): once the number is written the grammar admits only the lines it
//! names, so there the guard holds the number instead ([`number_guard`]): it may not name a
//! line an earlier excerpt of the file covers.
//! Plain Rust, so its tests run in every build; the sampler uses it under `--features local`.

use super::cited::Quotable;

/// The files a grammar quotes, and the lines it lets an excerpt of each open on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Quoting {
    pub files: Vec<Quotable>,
    pub openings: Vec<Opening>,
}

/// The lines (0-based flags) an excerpt of `path` in `shape` may open on under the grammar: a
/// line too long to quote, or empty, is none. The guard must know them: a prefix that only such
/// a line shares with a fresh one ("A" for "Agents …", too long, and a quoted "A refused …")
/// leads into the quoted line, and the guard, left with no token, gives way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opening {
    pub path: String,
    pub shape: Shape,
    pub lines: Vec<bool>,
}

/// The excerpt the answer is writing, of a quotable file some earlier excerpt also quoted.
#[derive(Debug)]
pub struct OpenExcerpt<'q> {
    file: &'q Quotable,
    /// The lines (0-based) a run matching the excerpt so far may open on: ones the grammar
    /// lets it open on, no earlier excerpt covers, and whose run reads as written so far.
    /// A token only narrows them.
    starts: Vec<usize>,
    shape: Shape,
    /// The excerpt's text so far, as written (JSON-escaped for [`Shape::Json`]).
    written: Vec<u8>,
}

/// How an excerpt is written: a JSON string, or the lines of a fenced block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Json,
    Markdown,
}

/// One excerpt found in the answer's text.
struct Found<'t> {
    path: &'t [u8],
    shape: Shape,
    /// The raw text after the excerpt's opening, up to its close or the end of the text.
    raw: &'t [u8],
    closed: bool,
}

const FENCE_OPEN: &[u8] = b"- **Excerpt**:\n```\n";
const EVIDENCE_OPEN: &[u8] = b"- **Evidence**: `";

/// [`OpenExcerpt`] when `text` ends inside an excerpt of one of the quoted files and an
/// earlier excerpt of that file was written; `None` otherwise (nothing to hold).
pub fn excerpt_guard<'q>(text: &[u8], quoting: &'q Quoting) -> Option<OpenExcerpt<'q>> {
    if quoting.files.is_empty() {
        return None;
    }
    let mut found = excerpts(text);
    // A fenced excerpt is the run its reference names: [`number_guard`] held that.
    let open = found
        .pop()
        .filter(|e| !e.closed && e.shape == Shape::Json)?;
    let file = quoting
        .files
        .iter()
        .find(|q| q.path.as_bytes() == open.path)?;
    let opens = openings(quoting, file, open.shape)?;
    let used = covered(&found, file)?;
    let free: Vec<usize> = (0..file.lines.len())
        .filter(|&o| opens[o] && !used[o])
        .collect();
    let written = open.raw.to_vec();
    let starts = runs_reading(file, &free, &written, open.shape);
    Some(OpenExcerpt {
        file,
        starts,
        shape: open.shape,
        written,
    })
}

/// The first line number of a reference to a quotable file, being written: the text ends in
/// `` - **Evidence**: `path:D `` with `D` the digits so far (perhaps none).
#[derive(Debug)]
pub struct OpenNumber {
    /// The numbers (1-based, in decimal) of the lines an excerpt may open on that no earlier
    /// excerpt of the file covers.
    free: Vec<String>,
    digits: Vec<u8>,
}

impl OpenNumber {
    /// Whether the token `piece` may follow: its digits must keep the number the start of a
    /// free line's, and one that ends the number (anything after its leading digits) must
    /// leave it a free line's number.
    pub fn admits(&self, piece: &[u8]) -> bool {
        let lead = piece.iter().take_while(|b| b.is_ascii_digit()).count();
        let mut digits = self.digits.clone();
        digits.extend_from_slice(&piece[..lead]);
        if lead == piece.len() {
            return self.free.iter().any(|f| f.as_bytes().starts_with(&digits));
        }
        digits.is_empty() || self.free.iter().any(|f| f.as_bytes() == digits.as_slice())
    }
}

/// [`OpenNumber`] when `text` ends inside the first number of a fenced Evidence item's
/// reference to a quoted file of which an earlier excerpt was written, or whose item's title
/// one free line of the file states ([`stated_line`]: then that line is the only number);
/// `None` otherwise.
pub fn number_guard(text: &[u8], quoting: &Quoting) -> Option<OpenNumber> {
    if quoting.files.is_empty() {
        return None;
    }
    let open = rfind(text, EVIDENCE_OPEN)?;
    let reference = &text[open + EVIDENCE_OPEN.len()..];
    let colon = reference.iter().position(|&b| b == b':')?;
    let digits = &reference[colon + 1..];
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let path = &reference[..colon];
    let file = quoting.files.iter().find(|q| q.path.as_bytes() == path)?;
    let opens = openings(quoting, file, Shape::Markdown)?;
    let used = covered(&excerpts(&text[..open]), file);
    let free = match stated_line(&text[..open], file, opens, used.as_deref()) {
        Some(line) => vec![(line + 1).to_string()],
        None => {
            let used = used?;
            (0..file.lines.len())
                .filter(|&o| opens[o] && !used[o])
                .map(|o| (o + 1).to_string())
                .collect()
        }
    };
    Some(OpenNumber {
        free,
        digits: digits.to_vec(),
    })
}

/// The line (0-based) of `file` the item whose Evidence is being written must open on: the one
/// that states its title, when the text before the reference (`before`) ends in a signal item's
/// heading (`#### Decision: title`, perhaps prose under it) whose title has at least
/// `contract::MIN_STATEMENT_WORDS` words, and one body line of the file holds most of them (the
/// rule of the checker's `signal-stated-elsewhere`, `contract::most_stating`), free for an
/// excerpt to open on. Qwen2.5-Coder-1.5B, given a decision record whose title is
/// `# Decision: a deterministic offline provider that infers its role`, titled its first item
/// with those words and quoted lines 19-21 under them (3 of the title's 5 words); the checker
/// moved the item to line 8 after the fact (`contract::fix`), so the answer went up repaired,
/// not as written. Held while the number is written, the item cites that line itself.
fn stated_line(
    before: &[u8],
    file: &Quotable,
    opens: &[bool],
    used: Option<&[bool]>,
) -> Option<usize> {
    let heading = rfind(before, b"\n#### ")? + 1;
    let rest = &before[heading..];
    // The heading's own item: no Evidence of another item between it and this reference.
    // (nor a fence: a `#### ` line inside an earlier excerpt is no heading).
    if find(rest, EVIDENCE_OPEN).is_some() || find(rest, b"```").is_some() {
        return None;
    }
    let line_end = rest.iter().position(|&b| b == b'\n')?;
    let title = std::str::from_utf8(&rest[b"#### ".len()..line_end]).ok()?;
    let statement = title.split_once(':').map_or(title, |(_, s)| s);
    let want = crate::contract::words(statement);
    if want.len() < crate::contract::MIN_STATEMENT_WORDS {
        return None;
    }
    // The frontmatter is metadata, as the checker has it: its `topic:` shares every title's words.
    // Its closing line's 1-based number is the 0-based index of the first body line.
    let line = |n: usize| {
        n.checked_sub(1)
            .and_then(|i| file.lines.get(i))
            .map(String::as_str)
    };
    let body = crate::contract::frontmatter_close(line, file.lines.len()).unwrap_or(0);
    let lines = (body..file.lines.len()).map(|i| (i, file.lines[i].as_str()));
    let (_, line) = crate::contract::most_stating(&want, lines)?;
    let free = opens[line] && used.is_none_or(|u| !u[line]);
    free.then_some(line)
}

/// The lines the grammar lets an excerpt of `file` in `shape` open on.
fn openings<'q>(quoting: &'q Quoting, file: &Quotable, shape: Shape) -> Option<&'q [bool]> {
    quoting
        .openings
        .iter()
        .find(|o| o.path == file.path && o.shape == shape)
        .map(|o| o.lines.as_slice())
        .filter(|o| o.len() == file.lines.len())
}

/// The lines of `file` the closed excerpts among `found` cover, or `None` when none covers any.
fn covered(found: &[Found], file: &Quotable) -> Option<Vec<bool>> {
    let mut used = vec![false; file.lines.len()];
    let mut any = false;
    let path = file.path.as_bytes();
    for earlier in found.iter().filter(|e| e.path == path && e.closed) {
        let content = decode(earlier.raw, earlier.shape);
        let lines: Vec<&[u8]> = content.split(|&b| b == b'\n').collect();
        let lines = match earlier.shape {
            // A fenced block's lines each end in a line break: the last piece is empty.
            Shape::Markdown => &lines[..lines.len().saturating_sub(1)],
            Shape::Json => &lines[..],
        };
        if lines.is_empty() {
            continue;
        }
        // Every run it matches: the checkers place an excerpt by its text, so the same text
        // at another copy of its lines is the same citation.
        for i in 0..file.lines.len().saturating_sub(lines.len() - 1) {
            let here = lines
                .iter()
                .zip(&file.lines[i..])
                .all(|(a, b)| *a == b.as_bytes());
            if here {
                used[i..i + lines.len()].iter_mut().for_each(|u| *u = true);
                any = true;
            }
        }
    }
    any.then_some(used)
}

/// The lines of `from` on which a run of `file`'s lines opens that reads as `raw` (an
/// excerpt's text as written so far): each whole line of it equal to the file's line, the
/// line still being written a prefix of the next one. A fenced block's closing fence, while
/// written, is not read as a line.
fn runs_reading(file: &Quotable, from: &[usize], raw: &[u8], shape: Shape) -> Vec<usize> {
    let (raw, closed) = match shape {
        Shape::Json => match string_end(raw) {
            Some(end) => (&raw[..end], true),
            None => (raw, false),
        },
        Shape::Markdown => (raw, false),
    };
    let content = decode(raw, shape);
    let mut lines: Vec<&[u8]> = content.split(|&b| b == b'\n').collect();
    let partial = if closed { None } else { lines.pop() };
    let partial = partial.filter(|p| {
        let fence = shape == Shape::Markdown && !lines.is_empty() && b"```".starts_with(p);
        !fence
    });
    from.iter()
        .copied()
        .filter(|&o| {
            let whole = lines
                .iter()
                .enumerate()
                .all(|(k, l)| file.lines.get(o + k).is_some_and(|f| f.as_bytes() == *l));
            whole
                && partial.is_none_or(|p| {
                    (file.lines.get(o + lines.len())).is_some_and(|f| f.as_bytes().starts_with(p))
                })
        })
        .collect()
}

impl OpenExcerpt<'_> {
    /// Whether the token `piece` may follow: the excerpt, as far as it is written, must still
    /// be the start of a run of the file's lines that opens on a line the grammar lets an
    /// excerpt open on and no earlier excerpt covers.
    pub fn admits(&self, piece: &[u8]) -> bool {
        let mut raw = self.written.clone();
        raw.extend_from_slice(piece);
        !runs_reading(self.file, &self.starts, &raw, self.shape).is_empty()
    }
}

/// Every excerpt in `text`, in order; only the last can be open.
fn excerpts(text: &[u8]) -> Vec<Found<'_>> {
    let mut found = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let json = find(&text[at..], b"\"excerpt\"").map(|i| at + i);
        let fence = find(&text[at..], FENCE_OPEN).map(|i| at + i);
        let next = match (json, fence) {
            (Some(j), Some(f)) if f < j => Err(f),
            (Some(j), _) => Ok(j),
            (None, Some(f)) => Err(f),
            (None, None) => break,
        };
        match next {
            Ok(key) => {
                let Some(value) = json_value(text, key + b"\"excerpt\"".len()) else {
                    at = key + 1;
                    continue;
                };
                let end = string_end(&text[value..]).map(|e| value + e);
                found.push(Found {
                    path: json_path_before(&text[..key]).unwrap_or_default(),
                    shape: Shape::Json,
                    raw: &text[value..end.unwrap_or(text.len())],
                    closed: end.is_some(),
                });
                at = end.map_or(text.len(), |e| e + 1);
            }
            Err(open) => {
                let body = open + FENCE_OPEN.len();
                // The block closes with a fence at the start of a line.
                let end = if text[body..].starts_with(b"```") {
                    Some(body)
                } else {
                    find(&text[body..], b"\n```").map(|i| body + i + 1)
                };
                found.push(Found {
                    path: markdown_path_before(&text[..open]).unwrap_or_default(),
                    shape: Shape::Markdown,
                    raw: &text[body..end.unwrap_or(text.len())],
                    closed: end.is_some(),
                });
                at = end.map_or(text.len(), |e| e + 3);
            }
        }
    }
    found
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

fn skip_ws(text: &[u8], mut at: usize) -> usize {
    while text.get(at).is_some_and(|b| b" \t\r\n".contains(b)) {
        at += 1;
    }
    at
}

/// Where a JSON string value begins (after its opening quote), `after` being the end of its
/// key: `ws ":" ws "\""`.
fn json_value(text: &[u8], after: usize) -> Option<usize> {
    let colon = skip_ws(text, after);
    (text.get(colon) == Some(&b':')).then_some(())?;
    let quote = skip_ws(text, colon + 1);
    (text.get(quote) == Some(&b'"')).then_some(quote + 1)
}

/// Where a JSON string's text (opening quote already read) ends: its unescaped closing quote.
fn string_end(raw: &[u8]) -> Option<usize> {
    let mut escaped = false;
    for (i, &b) in raw.iter().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'"' => return Some(i),
            _ => {}
        }
    }
    None
}

/// The value of the last `"path"` key before an excerpt key: the grammar writes an evidence
/// object's path first.
fn json_path_before(text: &[u8]) -> Option<&[u8]> {
    let key = rfind(text, b"\"path\"")?;
    let value = json_value(text, key + b"\"path\"".len())?;
    let end = string_end(&text[value..])?;
    Some(&text[value..value + end])
}

/// The path of the `- **Evidence**: `path:N-M`` line that opens a fenced excerpt.
fn markdown_path_before(text: &[u8]) -> Option<&[u8]> {
    let open = rfind(text, EVIDENCE_OPEN)?;
    let reference = &text[open + EVIDENCE_OPEN.len()..];
    let colon = reference.iter().position(|&b| b == b':')?;
    Some(&reference[..colon])
}

/// The excerpt's bytes: a JSON string's escapes undone (an escape cut off at the end is
/// dropped: it is still being written), a fenced block as it is.
fn decode(raw: &[u8], shape: Shape) -> Vec<u8> {
    if shape == Shape::Markdown {
        return raw.to_vec();
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] != b'\\' {
            out.push(raw[i]);
            i += 1;
            continue;
        }
        let Some(&kind) = raw.get(i + 1) else {
            break;
        };
        let simple = match kind {
            b'n' => Some(b'\n'),
            b't' => Some(b'\t'),
            b'r' => Some(b'\r'),
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'"' | b'\\' | b'/' => Some(kind),
            _ => None,
        };
        if let Some(b) = simple {
            out.push(b);
            i += 2;
            continue;
        }
        if kind != b'u' || raw.len() < i + 6 {
            break;
        }
        let code = std::str::from_utf8(&raw[i + 2..i + 6])
            .ok()
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .and_then(char::from_u32);
        let Some(c) = code else {
            break;
        };
        let mut buf = [0u8; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        i += 6;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One quotable file at `path` holding `lines`, each an opening in every shape of `shapes`
    /// where `opens` says so.
    fn quoting(path: &str, lines: &[&str], shapes: &[Shape], opens: fn(&str) -> bool) -> Quoting {
        Quoting {
            openings: shapes
                .iter()
                .map(|&shape| Opening {
                    path: path.to_string(),
                    shape,
                    lines: lines.iter().map(|l| opens(l)).collect(),
                })
                .collect(),
            files: vec![Quotable {
                path: path.to_string(),
                lines: lines.iter().map(|l| l.to_string()).collect(),
            }],
        }
    }

    /// `src/cli/run.rs`, every line with text an opening in both shapes.
    fn file() -> Quoting {
        let lines = [
            "use crate::project::Project;",
            "use crate::runtime::Session;",
            "",
            "pub struct Args {",
            "    /// The primary agent to run",
            "    pub agent: String,",
            "}",
        ];
        quoting(
            "src/cli/run.rs",
            &lines,
            &[Shape::Json, Shape::Markdown],
            |l| !l.is_empty(),
        )
    }

    #[test]
    fn a_json_excerpt_cannot_open_on_a_line_an_earlier_one_quoted() {
        let quoted = file();
        let earlier = r#"{"name":"scope","result":{"evidence":[{"path": "src/cli/run.rs", "start": 4, "end": 5, "excerpt": "pub struct Args {\n    /// The primary agent to run", "fact": "x"}, {"path": "src/cli/run.rs", "start": 4, "end": 5, "excerpt": ""#;
        let open = excerpt_guard(earlier.as_bytes(), &quoted).expect("an excerpt is open");
        // `pub struct Args {` and the line after it are taken; `pub agent` and the imports not.
        assert!(
            !open.admits(b"pub struct"),
            "line 4 opened the earlier excerpt"
        );
        assert!(
            !open.admits(b"    /// The"),
            "line 5 is inside the earlier excerpt"
        );
        assert!(open.admits(b"    pub agent"), "line 6 is free");
        assert!(open.admits(b"use crate::"), "lines 1 and 2 are free");
        // A prefix both a taken and a free line share is still open.
        assert!(open.admits(b"    "));
        // Closing the string right after a taken line's text would make it the first line.
        let mut partial = earlier.as_bytes().to_vec();
        partial.extend_from_slice(b"    pub agent: String,");
        let open = excerpt_guard(&partial, &quoted).unwrap();
        assert!(open.admits(b"\\n}"), "running on into the next line");
        assert!(open.admits(b"\", "), "closing after a free line");
        assert!(!open.admits(b"X"), "no line reads so");
    }

    /// A fenced excerpt is the run its reference names (`grammar::tied_cites`): the number is
    /// held, and the excerpt itself is left to the grammar.
    #[test]
    fn a_fenced_excerpts_number_cannot_name_a_line_an_earlier_one_quoted() {
        let quoted = file();
        let earlier = "### Findings\n- **Evidence**: `src/cli/run.rs:1-2`\n- **Excerpt**:\n```\nuse crate::project::Project;\nuse crate::runtime::Session;\n```\n- **Evidence**: `src/cli/run.rs:";
        let open = number_guard(earlier.as_bytes(), &quoted).expect("a number is open");
        assert!(!open.admits(b"1"), "line 1 was quoted");
        assert!(!open.admits(b"2`"), "line 2 was quoted");
        assert!(!open.admits(b"3"), "line 3 is empty: it opens no excerpt");
        assert!(open.admits(b"4"), "line 4 is free");
        assert!(open.admits(b"6`\n"), "ending on a free line");
        assert!(open.admits(b"5-"), "a range opening on a free line");
        assert!(!open.admits(b"8"), "past the file's end");
        // The excerpt after the reference is the grammar's: no excerpt guard for it.
        let text = format!("{earlier}4`\n- **Excerpt**:\n```\npub");
        assert!(excerpt_guard(text.as_bytes(), &quoted).is_none());
        assert!(number_guard(text.as_bytes(), &quoted).is_none());
        // Past the first number (the range's end is the range guard's), nothing is held here.
        let range = format!("{earlier}4-");
        assert!(number_guard(range.as_bytes(), &quoted).is_none());
        // The first reference of the file holds nothing.
        let first = "### Findings\n- **Evidence**: `src/cli/run.rs:";
        assert!(number_guard(first.as_bytes(), &quoted).is_none());
    }

    /// A decision record: frontmatter, its title, and the lines of its decision.
    fn record() -> Quoting {
        let lines = [
            "---",
            "topic: \"a deterministic offline provider that plays a role\"",
            "---",
            "# Decision: a deterministic offline provider that infers its role",
            "",
            "We ship an `offline` provider. It is deterministic: the same request, the same reply.",
            "It uses no network and no key.",
            "### It plays a role from what the agent declares",
        ];
        quoting("thoughts/offline.md", &lines, &[Shape::Markdown], |l| {
            !l.is_empty()
        })
    }

    /// An item whose title one line of the file states cites that line (the checker's
    /// `signal-stated-elsewhere`, held while the number is written), the first item as well.
    #[test]
    fn an_item_cites_the_line_that_states_its_title() {
        let quoted = record();
        let title = "#### Decision: a deterministic offline provider that infers its role\n";
        let first = format!("<answer>\n{title}- **Evidence**: `thoughts/offline.md:");
        let open = number_guard(first.as_bytes(), &quoted).expect("the title holds the number");
        assert!(open.admits(b"4"), "line 4 states the title");
        assert!(open.admits(b"4-"), "a range from it");
        assert!(!open.admits(b"6"), "line 6 holds 3 of its 5 words");
        assert!(
            !open.admits(b"2"),
            "the frontmatter's topic is no statement"
        );
        // Prose under the heading is still the heading's item.
        let prose =
            format!("<answer>\n{title}Why it matters.\n- **Evidence**: `thoughts/offline.md:");
        assert!(!number_guard(prose.as_bytes(), &quoted)
            .unwrap()
            .admits(b"6"));
        // The same title again, once line 4 is quoted: the free lines, as before.
        let again = format!(
            "{first}4-4`\n- **Excerpt**:\n```\n{}\n```\n\n{title}- **Evidence**: `thoughts/offline.md:",
            quoted.files[0].lines[3]
        );
        let open = number_guard(again.as_bytes(), &quoted).expect("an earlier excerpt");
        assert!(!open.admits(b"4`"), "line 4 was quoted");
        assert!(open.admits(b"6"), "line 6 is free");
        // A title too short to point at a line, or one no line states, holds nothing on its own.
        for title in [
            "#### Decision: offline provider\n",
            "#### Spec: retries wait longer each attempt\n",
        ] {
            let text = format!("<answer>\n{title}- **Evidence**: `thoughts/offline.md:");
            assert!(number_guard(text.as_bytes(), &quoted).is_none(), "{title}");
        }
        // A bare Evidence item after an excerpt that holds a `#### ` line takes no title from it.
        let inside = "<answer>\n- **Evidence**: `notes.md:1-1`\n- **Excerpt**:\n```\n#### Decision: a deterministic offline provider that infers its role\n```\n- **Evidence**: `thoughts/offline.md:";
        assert!(number_guard(inside.as_bytes(), &quoted).is_none());
    }

    /// The digits written so far are a prefix: `1` may still become a free `12`.
    #[test]
    fn a_number_is_held_digit_by_digit() {
        let lines: Vec<String> = (1..=12).map(|i| format!("line {i}")).collect();
        let path = "notes.md".to_string();
        let quoted = Quoting {
            openings: vec![Opening {
                path: path.clone(),
                shape: Shape::Markdown,
                lines: vec![true; lines.len()],
            }],
            files: vec![Quotable { path, lines }],
        };
        let text = "- **Evidence**: `notes.md:1`\n- **Excerpt**:\n```\nline 1\n```\n\n- **Evidence**: `notes.md:1";
        let open = number_guard(text.as_bytes(), &quoted).expect("a number is open");
        assert!(!open.admits(b"`"), "line 1 was quoted");
        assert!(!open.admits(b"-"), "nor may a range open on it");
        assert!(open.admits(b"2"), "12 is free");
        assert!(open.admits(b"0`"), "10 is free");
        assert!(!open.admits(b"3"), "there is no line 13");
    }

    #[test]
    fn nothing_is_held_without_an_earlier_excerpt_of_the_same_file() {
        let quoted = file();
        // The first excerpt of the answer.
        let first = r#"{"evidence":[{"path": "src/cli/run.rs", "excerpt": "pub"#;
        assert!(excerpt_guard(first.as_bytes(), &quoted).is_none());
        // An earlier excerpt of another file.
        let other = r#"[{"path": "README.md", "excerpt": "pub struct Args {"}, {"path": "src/cli/run.rs", "excerpt": "pub"#;
        assert!(excerpt_guard(other.as_bytes(), &quoted).is_none());
        // No excerpt open: the text is past the last one's close.
        let closed = r#"[{"path": "src/cli/run.rs", "excerpt": "pub struct Args {"}, {"path": "src/cli/run.rs", "fact": "pub"#;
        assert!(excerpt_guard(closed.as_bytes(), &quoted).is_none());
        // A file the grammar does not quote.
        assert!(excerpt_guard(closed.as_bytes(), &Quoting::default()).is_none());
    }

    #[test]
    fn a_prefix_only_a_line_the_grammar_cannot_open_on_shares_is_refused() {
        let mut quoted = file();
        // `pub agent: String,` may not open an excerpt (too long to quote, say).
        quoted.openings[0].lines[5] = false;
        let text = r#"[{"path": "src/cli/run.rs", "excerpt": "pub struct Args {\n    /// The primary agent to run"}, {"path": "src/cli/run.rs", "excerpt": ""#;
        let open = excerpt_guard(text.as_bytes(), &quoted).unwrap();
        // Only line 6 and the quoted line 5 begin with four spaces: a dead end.
        assert!(!open.admits(b"    "));
        assert!(open.admits(b"use"));
        // Without the grammar's openings for the shape, nothing is held.
        quoted.openings.clear();
        assert!(excerpt_guard(text.as_bytes(), &quoted).is_none());
    }

    /// `src/model/retry.rs` holds `impl RetryPolicy {` twice: an excerpt that opens on the
    /// second copy must go on with the second copy's lines, not the first's.
    #[test]
    fn a_line_the_file_holds_twice_opens_only_the_run_not_yet_quoted() {
        let lines = [
            "impl RetryPolicy {",
            "    /// The wait before retry number `retry`.",
            "}",
            "impl RetryPolicy {",
            "    pub fn none() -> Self {",
        ];
        let quoted = quoting("src/model/retry.rs", &lines, &[Shape::Json], |_| true);
        let text = r#"[{"path": "src/model/retry.rs", "excerpt": "impl RetryPolicy {\n    /// The wait before retry number `retry`."}, {"path": "src/model/retry.rs", "excerpt": "impl RetryPolicy {\n    "#;
        let open = excerpt_guard(text.as_bytes(), &quoted).expect("an excerpt is open");
        assert!(!open.admits(b"/// The"), "the run of lines 1-2 was quoted");
        assert!(open.admits(b"pub fn none"), "the run of lines 4-5 is free");
        // An earlier excerpt covers each copy of its text: one line quoted alone at line 1
        // takes line 4 too.
        let text = r#"[{"path": "src/model/retry.rs", "excerpt": "impl RetryPolicy {"}, {"path": "src/model/retry.rs", "excerpt": "impl"#;
        let open = excerpt_guard(text.as_bytes(), &quoted).expect("an excerpt is open");
        assert!(!open.admits(b" RetryPolicy"), "both copies are quoted");
    }

    #[test]
    fn escapes_are_read_as_the_characters_they_stand_for() {
        assert_eq!(
            decode(br#"a\"b\\c\nd\u00e9"#, Shape::Json),
            "a\"b\\c\nd\u{e9}".as_bytes()
        );
        // An escape still being written is left out.
        assert_eq!(decode(br"ab\", Shape::Json), b"ab");
        assert_eq!(decode(br"ab\u00", Shape::Json), b"ab");
        assert_eq!(string_end(br#"a\"b" rest"#), Some(4));
        assert_eq!(string_end(br#"a\\"#), None);
    }
}
