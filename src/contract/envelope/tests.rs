use super::*;

const GOOD: &str = "---\nmessage_id: thoughts-2026-01-19-001\ncorrelation_id: c-1\n\
    timestamp: 2026-01-19T14:30:00Z\nmessage_type: DOCUMENT_ANALYSIS_RESPONSE\n---\n\n\
    <thinking>\nwhy\n</thinking>\n\n<answer>\n## Analysis\n\n#### Decision: JWT\n\
    - **Evidence**: `docs/a.md:2-3`\n- **Excerpt**:\n  ```markdown\n  line two\n  line three\n  ```\n\
    </answer>\n";

fn codes(env: &Envelope) -> Vec<&str> {
    env.problems.iter().map(|p| p.code.as_ref()).collect()
}

#[test]
fn parses_a_good_envelope() {
    let env = parse(GOOD).unwrap();
    assert_eq!(env.message_id(), Some("thoughts-2026-01-19-001"));
    assert_eq!(env.timestamp(), Some("2026-01-19T14:30:00Z"));
    let f = env.field("correlation_id").unwrap();
    assert_eq!(&GOOD[f.key_span.clone()], "correlation_id");
    assert_eq!(&GOOD[f.value_span.clone()], "c-1");
    assert_eq!(env.headings.len(), 2);
    assert_eq!(env.headings[1].text, "Decision: JWT");
    assert_eq!(env.evidence.len(), 1);
    let ev = &env.evidence[0];
    assert_eq!(ev.references[0].to_string(), "docs/a.md:2-3");
    assert_eq!(&GOOD[ev.references[0].span.clone()], "`docs/a.md:2-3`");
    let block = ev.excerpt.as_ref().unwrap().block.as_ref().unwrap();
    assert_eq!(block.lines(), vec!["line two", "line three"]);
    assert_eq!(
        env.answer_text(GOOD).unwrap().lines().next(),
        Some("## Analysis")
    );
    assert_eq!(env.thinking_text(GOOD), Some("why"));
}

#[test]
fn numbers_keep_their_source_text() {
    let text = "---\ncorrelation_id: 0012\nflag: yes\n---\n";
    let env = Envelope::parse_lenient(text);
    assert_eq!(env.correlation_id(), Some("0012"));
    assert_eq!(env.scalar("flag"), Some("yes"));
}

#[test]
fn frontmatter_problems() {
    assert_eq!(
        codes(&Envelope::parse_lenient(
            "<thinking>t</thinking><answer>a</answer>"
        )),
        ["envelope/frontmatter-missing"]
    );
    assert_eq!(
        codes(&Envelope::parse_lenient("hello")),
        [
            "envelope/frontmatter-missing",
            "envelope/tags",
            "envelope/tags"
        ]
    );
    assert_eq!(
        codes(&Envelope::parse_lenient("---\na: 1\n")),
        ["envelope/frontmatter-unclosed"]
    );
    let env = Envelope::parse_lenient("---\na: [1\n---\n<thinking>x</thinking><answer>y</answer>");
    assert_eq!(codes(&env), ["envelope/frontmatter-yaml"]);
    let env =
        Envelope::parse_lenient("---\na: 1\na: 2\n---\n<thinking>x</thinking><answer>y</answer>");
    assert_eq!(codes(&env), ["envelope/frontmatter-yaml"]);
    let env = Envelope::parse_lenient("---\n- a\n---\n<thinking>x</thinking><answer>y</answer>");
    assert_eq!(codes(&env), ["envelope/frontmatter-yaml"]);
}

#[test]
fn tags_in_code_are_text() {
    let text = "---\na: 1\n---\n<thinking>\nsee `<answer>`\n</thinking>\n<answer>\n```md\n<answer>\n</answer>\n```\nok\n</answer>\n";
    let env = parse(text).unwrap();
    assert!(env.answer_text(text).unwrap().ends_with("ok"));
}

#[test]
fn tag_order_problems() {
    let fm = "---\na: 1\n---\n";
    let cases = [
        ("<answer>\na\n</answer>\n<thinking>\nt\n</thinking>\n", 1),
        ("<thinking>\nt\n<answer>\na\n</answer>\n", 1),
        ("<thinking>\nt\n</thinking>\n<answer>\na\n", 1),
        (
            "<thinking>\nt\n</thinking>\n<thinking>\nt\n</thinking>\n<answer>\na\n</answer>\n",
            1,
        ),
        (
            "<thinking>\nt\n</thinking>\n<answer>\n<answer>\na\n</answer>\n</answer>\n",
            2,
        ),
        ("<thinking>\nt\n</thinking>\n", 1),
    ];
    for (body, n) in cases {
        let text = format!("{fm}{body}");
        let env = Envelope::parse_lenient(&text);
        let tags = env
            .problems
            .iter()
            .filter(|p| p.code == Rule::Tags.code())
            .count();
        assert_eq!(tags, n, "{body:?}: {:?}", env.problems);
    }
}

#[test]
fn stray_and_empty() {
    let text = "---\na: 1\n---\nhello\n<thinking>\n \n</thinking>\n<answer>\n\n</answer>\nbye";
    let env = Envelope::parse_lenient(text);
    assert_eq!(
        codes(&env),
        [
            "envelope/stray-text",
            "envelope/thinking-empty",
            "envelope/answer-empty",
            "envelope/stray-text"
        ]
    );
}

#[test]
fn references_parse() {
    assert_eq!(parse_reference("a.md:3"), Ok(("a.md", 3, 3)));
    assert_eq!(parse_reference(" a:b.md:3-5 "), Ok(("a:b.md", 3, 5)));
    assert!(parse_reference("a.md").is_err());
    assert!(parse_reference("a.md:0").is_err());
    assert!(parse_reference("a.md:5-3").is_err());
    assert!(parse_reference(":5").is_err());
    assert!(parse_reference("a.md:x").is_err());
    assert!(parse_reference("a.md:99999999999999999999999").is_err());
}

#[test]
fn a_reference_without_backticks_is_shown_wrapped_in_the_help() {
    let bare = GOOD.replace("`docs/a.md:2-3`", "docs/a.md:2-3 (the decision)");
    let env = Envelope::parse_lenient(&bare);
    assert_eq!(codes(&env), ["evidence/reference-format"]);
    let help = env.problems[0].help.as_deref().unwrap_or_default();
    assert!(
        help.ends_with("write the line as: - **Evidence**: `docs/a.md:2-3`"),
        "{help}"
    );
    let none = GOOD.replace("`docs/a.md:2-3`", "the decision");
    let env = Envelope::parse_lenient(&none);
    let help = env.problems[0].help.as_deref().unwrap_or_default();
    assert!(help.contains("`path:N-M`"), "{help}");
}

#[test]
fn evidence_structure_problems() {
    let text = "---\na: 1\n---\n<thinking>\nt\n</thinking>\n<answer>\n\
        - **Evidence**: `a.md:0`\n\
        - **Excerpt**: nothing\n\
        - **Excerpt**:\n  ```\n  x\n  ```\n\
        - **Evidence:** `a.md:1`\n\n\
        **Evidence**: `b.md:2`\n\n**Excerpt**:\n\n    indented\n\n</answer>\n";
    let env = Envelope::parse_lenient(text);
    assert_eq!(
        codes(&env),
        [
            "evidence/reference-format",
            "excerpt/not-fenced",
            "excerpt/orphan",
            "evidence/missing-excerpt",
            "excerpt/not-fenced",
        ],
        "{:#?}",
        env.problems
    );
    assert_eq!(env.evidence.len(), 3);
}

#[test]
fn fence_at_column_zero_after_list_item() {
    let text = "---\na: 1\n---\n<thinking>\nt\n</thinking>\n<answer>\n\
        - **Evidence**: `a.md:1`\n- **Excerpt**:\n```\nfirst\n```\n</answer>\n";
    let env = parse(text).unwrap();
    let block = env.evidence[0]
        .excerpt
        .as_ref()
        .unwrap()
        .block
        .as_ref()
        .unwrap();
    assert_eq!(block.lines(), ["first"]);
}

/// Issue #28 item 7: a repeated mistake is listed 100 times and counted, not kept a million
/// times; the count is exact.
#[test]
fn repeated_problems_are_listed_up_to_the_cap_and_counted() {
    let head = "---\na: 1\n---\n<thinking>\nt\n</thinking>\n<answer>\nx\n</answer>\n";
    let text = format!("{head}{}", "</answer>\n".repeat(10_000));
    let env = Envelope::parse_lenient(&text);
    let tags: Vec<&Problem> = env
        .problems
        .iter()
        .filter(|p| p.code == "envelope/tags")
        .collect();
    assert_eq!(tags.len(), crate::contract::rule::MAX_PER_RULE + 1);
    let last = tags.last().unwrap();
    assert!(
        last.message
            .starts_with("9900 more `envelope/tags` problems from here on are not listed"),
        "{}",
        last.message
    );
    // Where the first one left out is: the 101st repeat.
    let at = head.len() + 100 * "</answer>\n".len();
    assert_eq!(last.span, Some(at..at + "</answer>".len()));
}

/// Past [`answer::MAX_ITEMS`] Evidence items the rest are counted, not kept, and the answer is
/// told so: a false citation cannot hide behind a thousand true ones.
#[test]
fn evidence_past_the_cap_is_counted_and_reported() {
    let item = "- **Evidence**: `docs/a.md:1`\n- **Excerpt**:\n  ```text\n  one\n  ```\n";
    let text = format!(
        "---\na: 1\n---\n<thinking>\nt\n</thinking>\n<answer>\n{}</answer>\n",
        item.repeat(answer::MAX_ITEMS + 5)
    );
    let env = Envelope::parse_lenient(&text);
    assert_eq!(env.evidence.len(), answer::MAX_ITEMS);
    let too_large: Vec<&Problem> = env
        .problems
        .iter()
        .filter(|p| p.code == "envelope/too-large")
        .collect();
    assert_eq!(too_large.len(), 1, "{:#?}", env.problems);
    assert!(
        too_large[0].message.contains("holds 1005 Evidence items")
            && too_large[0].message.contains("the 5 from here on are not"),
        "{}",
        too_large[0].message
    );
    // The Excerpts of the items left out are not orphans.
    assert!(
        !codes(&env).contains(&"excerpt/orphan"),
        "{:?}",
        codes(&env)
    );
}

/// An Excerpt longer than a parse piece is cut and reopened: it still reads as one code block,
/// with every line counted, its `<answer>` lines stay text inside code, and nothing after it is
/// misread.
#[test]
fn an_excerpt_longer_than_a_piece_reads_as_one_block() {
    let lines = 2 * chunks::MAX_PIECE / "  <answer> x\n".len();
    let text = format!(
        "---\na: 1\n---\n<thinking>\nt\n</thinking>\n<answer>\n- **Evidence**: `docs/a.md:1`\n\
         - **Excerpt**:\n  ```text\n{}  ```\n- **Evidence**: `docs/b.md:2`\n- **Excerpt**:\n  \
         ```text\n  two\n  ```\n</answer>\n",
        "  <answer> x\n".repeat(lines)
    );
    let env = Envelope::parse_lenient(&text);
    assert_eq!(codes(&env), Vec::<&str>::new(), "{:#?}", env.problems);
    assert_eq!(env.evidence.len(), 2);
    let long = env.evidence[0]
        .excerpt
        .as_ref()
        .unwrap()
        .block
        .as_ref()
        .unwrap();
    assert_eq!(long.line_count(), lines);
    assert!(long.content.len() <= MAX_EXCERPT_BYTES);
    let shown = &text[long.span.clone()];
    assert!(
        shown.trim_end().ends_with("  ```"),
        "{:?}",
        &shown[shown.len().saturating_sub(40)..]
    );
    let short = env.evidence[1]
        .excerpt
        .as_ref()
        .unwrap()
        .block
        .as_ref()
        .unwrap();
    assert_eq!(short.lines(), vec!["two"]);
}

#[test]
fn named_paths_are_file_names_not_words_globs_or_placeholders() {
    use super::answer::named_path;
    assert_eq!(named_path("src/config.rs"), Some("src/config.rs"));
    assert_eq!(
        named_path(" thoughts/shared/x-y_z.md "),
        Some("thoughts/shared/x-y_z.md")
    );
    assert_eq!(named_path("src/config.rs:12-14"), Some("src/config.rs"));
    assert_eq!(named_path("../up/x.md"), Some("../up/x.md"));
    for no in [
        "config.rs",
        "and/or",
        "thoughts/**/*.md",
        "thoughts/shared/decisions/<file>.md",
        "https://example.com/a.md",
        "src/cli",
        "src/x.",
        "a b/c.md",
        "src/.hidden",
        "",
    ] {
        assert_eq!(named_path(no), None, "{no}");
    }
}
