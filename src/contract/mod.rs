//! The envelope contract: pure checking of an answer's text against a declared contract.
//!
//! This module knows nothing of the runtime: text, contract and context in, report out. The
//! runtime, `switchboard check`, lint and the tests all share it.
//!
//! ```no_run
//! use switchboard::contract::{check, CheckContext, Contract, FileCache};
//! use switchboard::project::Project;
//!
//! let project = Project::open(".").unwrap();
//! let files = FileCache::new(); // one per run: each cited file is read once
//! let ctx = CheckContext::new(&project, &files).with_correlation_id("research-auth");
//! let answer = std::fs::read_to_string("answer.md").unwrap();
//! let report = check(&answer, &Contract::document_analysis(), &ctx);
//! if !report.is_conformant() {
//!     eprintln!("{}", report.render("answer.md", &answer, false));
//!     let _next_turn = report.repair_prompt();
//! }
//! ```
//!
//! The rules and their codes are written down in `docs/envelope.md`.

mod check;
mod envelope;
mod fields;
mod files;
pub mod fix;
pub mod json;
mod json_hint;
mod report;
pub mod retitle;
mod rule;
pub mod schema;
pub mod spec;
pub mod trim;

pub use check::{
    assert_conforms, check, check_envelope, findings, is_date, is_token, parse_message_id,
    tally_evidence, verified_items, verify_document, verify_evidence, CheckContext, DocumentCheck,
    EvidenceTally, Finding, VerifiedItem,
};
pub(crate) use check::{
    has_word, most_stating, quoted_citation, similar_files, words, MIN_STATEMENT_WORDS,
};
pub(crate) use envelope::named_path;
pub use envelope::{
    parse, parse_document, parse_reference, Citation, Envelope, EvidenceItem, Excerpt,
    ExcerptBlock, Field, FieldValue, Heading, Label, TagBlock,
};
pub(crate) use files::frontmatter_close;
pub use files::{CitedFileError, FileCache, SourceFile, MAX_CITED_FILE_BYTES};
pub use json::{check_json_detailed, FailureReason, JsonCheck};
pub use report::Report;
pub use rule::Rule;
pub use schema::{JsonContract, SanitizeRule, SchemaError, SchemaSource};
pub use spec::{
    Contract, ContractDecl, ContractError, ContractFormat, ContractSpec, EvidencePolicy, FieldKind,
    FieldRule, OnViolation,
};
