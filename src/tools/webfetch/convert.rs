//! What a fetched body is, and how it reaches the model: HTML as markdown (or plain text, or as
//! is), text, markdown and JSON as they are, anything else refused by name.

use super::ToolError;

/// The `format` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Text,
    Raw,
}

impl Format {
    pub fn parse(value: Option<&str>) -> Result<Format, ToolError> {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("markdown") | Some("md") => Ok(Format::Markdown),
            Some("text") => Ok(Format::Text),
            Some("raw") | Some("html") => Ok(Format::Raw),
            Some(other) => Err(ToolError::BadArguments {
                tool: "webfetch".into(),
                message: format!("`format` must be markdown, text or raw, not `{other}`"),
            }),
        }
    }
}

/// A body the model cannot read, in words that say what was sent and what to look for instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unreadable(pub String);

/// What kind of body this is, from its content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Html,
    /// Plain text, markdown, JSON, XML, CSV: passed through.
    Text,
}

impl Kind {
    /// Classifies a `Content-Type` header; types the model cannot read are an error naming them.
    pub fn of(content_type: &str) -> Result<Kind, Unreadable> {
        let mime = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let textual_app = [
            "application/json",
            "application/ld+json",
            "application/xml",
            "application/javascript",
            "application/x-yaml",
            "application/yaml",
            "application/toml",
        ];
        if mime == "text/html" || mime == "application/xhtml+xml" {
            Ok(Kind::Html)
        } else if mime.starts_with("text/")
            || textual_app.contains(&mime.as_str())
            || mime.ends_with("+json")
            || mime.ends_with("+xml")
        {
            Ok(Kind::Text)
        } else {
            Err(Unreadable(format!(
                "the server sent `{mime}`, which webfetch does not read (it reads HTML, text, \
                 markdown and JSON); look for an HTML or text version of this resource"
            )))
        }
    }

    /// Like [`Kind::of`], but a missing content type is judged from the bytes: text if it is
    /// UTF-8 without NUL bytes (HTML if it starts like a document), otherwise refused.
    pub fn sniff(content_type: &str, body: &[u8]) -> Result<Kind, Unreadable> {
        if !content_type.trim().is_empty() {
            return Kind::of(content_type);
        }
        let head = &body[..body.len().min(1024)];
        // A cut may fall inside a multi-byte character; only the head has to be valid.
        let text = match std::str::from_utf8(head) {
            Ok(t) => t,
            Err(e) if e.error_len().is_none() => {
                std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or("")
            }
            Err(_) => {
                return Err(Unreadable(
                    "the server sent no content type and the body is not text".into(),
                ))
            }
        };
        if text.contains('\0') {
            return Err(Unreadable(
                "the server sent no content type and the body is binary".into(),
            ));
        }
        let start = text.trim_start().to_ascii_lowercase();
        if start.starts_with("<!doctype html") || start.starts_with("<html") {
            Ok(Kind::Html)
        } else {
            Ok(Kind::Text)
        }
    }
}

/// The text the model gets.
pub fn convert(kind: Kind, format: Format, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    match (kind, format) {
        (Kind::Text, _) | (Kind::Html, Format::Raw) => text.into_owned(),
        (Kind::Html, Format::Markdown) => html_to_markdown(&text),
        (Kind::Html, Format::Text) => markdown_to_text(&html_to_markdown(&text)),
    }
}

/// HTML → markdown with `htmd`, leaving out what a reader never sees (scripts, styles, forms).
pub fn html_to_markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "head", "svg", "iframe", "form",
        ])
        .build();
    match converter.convert(html) {
        Ok(md) => md.trim().to_string(),
        // htmd only fails on I/O inside its writer; fall back to the text itself.
        Err(_) => html.to_string(),
    }
}

/// Markdown → plain text: the words, with paragraph breaks, without markup.
pub fn markdown_to_text(markdown: &str) -> String {
    use pulldown_cmark::{Event, Parser, TagEnd};
    let mut out = String::new();
    for event in Parser::new(markdown) {
        match event {
            Event::Text(t) | Event::Code(t) => out.push_str(&t),
            Event::SoftBreak => out.push(' '),
            Event::HardBreak => out.push('\n'),
            Event::End(
                TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item | TagEnd::CodeBlock,
            ) => out.push('\n'),
            _ => {}
        }
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        assert_eq!(Kind::of("text/html; charset=utf-8"), Ok(Kind::Html));
        assert_eq!(Kind::of("application/xhtml+xml"), Ok(Kind::Html));
        assert_eq!(Kind::of("text/plain"), Ok(Kind::Text));
        assert_eq!(Kind::of("text/markdown"), Ok(Kind::Text));
        assert_eq!(Kind::of("application/json"), Ok(Kind::Text));
        assert_eq!(Kind::of("application/problem+json"), Ok(Kind::Text));
        for binary in ["application/pdf", "image/png", "application/octet-stream"] {
            let err = Kind::of(binary).unwrap_err().0;
            assert!(err.contains(binary), "{err}");
        }
    }

    #[test]
    fn sniffing_without_a_content_type() {
        assert_eq!(Kind::sniff("", b"<!DOCTYPE html><p>x"), Ok(Kind::Html));
        assert_eq!(Kind::sniff("", b"plain words"), Ok(Kind::Text));
        assert!(Kind::sniff("", b"\x89PNG\r\n\x1a\n\0\0").is_err());
        // A cut in the middle of `é` is still text.
        assert_eq!(
            Kind::sniff("", &"caf\u{e9}".as_bytes()[..4]),
            Ok(Kind::Text)
        );
    }

    #[test]
    fn html_becomes_markdown_without_scripts() {
        let html = "<html><head><title>T</title><style>p{}</style></head><body>\
                    <h1>Title</h1><p>Some <b>bold</b> and a <a href=\"https://x.test/\">link</a>.</p>\
                    <script>alert(1)</script><ul><li>one</li><li>two</li></ul></body></html>";
        let md = html_to_markdown(html);
        assert!(md.contains("# Title"), "{md}");
        assert!(md.contains("**bold**"), "{md}");
        assert!(md.contains("[link](https://x.test/)"), "{md}");
        assert!(md.contains("one") && md.contains("two"), "{md}");
        assert!(!md.contains("alert") && !md.contains("p{}"), "{md}");
        let text = convert(Kind::Html, Format::Text, html.as_bytes());
        assert!(text.contains("Some bold and a link."), "{text}");
        assert!(!text.contains("**") && !text.contains("]("), "{text}");
        assert_eq!(convert(Kind::Html, Format::Raw, html.as_bytes()), html);
    }

    #[test]
    fn format_argument() {
        assert_eq!(Format::parse(None).unwrap(), Format::Markdown);
        assert_eq!(Format::parse(Some("TEXT")).unwrap(), Format::Text);
        assert!(Format::parse(Some("pdf")).is_err());
    }
}
