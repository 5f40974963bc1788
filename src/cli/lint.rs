//! `switchboard lint` (not implemented yet).

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_global: &super::Global, _args: Args) -> u8 {
    eprintln!("switchboard lint: not implemented yet");
    super::EXIT_ERROR
}
