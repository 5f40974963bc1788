//! `switchboard agents` (not implemented yet).

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_global: &super::Global, _args: Args) -> u8 {
    eprintln!("switchboard agents: not implemented yet");
    super::EXIT_ERROR
}
