//! `switchboard check` (not implemented yet).

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_global: &super::Global, _args: Args) -> u8 {
    eprintln!("switchboard check: not implemented yet");
    super::EXIT_ERROR
}
