//! Helpers shared by the integration tests in `tests/it/` (the benches include single files
//! of this folder with `#[path]`).

pub mod clock;
pub mod durable;
pub mod fs;
pub mod manifest;
pub mod mock;
pub mod scripted;
pub mod synth;
pub mod wire;
