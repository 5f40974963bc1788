//! The envelope contract: pure checking of an answer's text against a declared contract.
//!
//! This module knows nothing of the runtime: text, contract and context in, report out. The
//! runtime, `switchboard check`, lint and the tests all share it.

pub mod spec;

pub use spec::{
    Contract, ContractDecl, ContractError, ContractFormat, ContractSpec, EvidencePolicy, FieldKind,
    FieldRule, OnViolation,
};
