//! `switchboard worker --restate ADMIN_URL`: serves this project's sessions as durable
//! workflows on a Restate server (feature `restate`; docs/restate.md). It listens for the
//! server, registers itself with the server's admin API, and runs until Ctrl-C.

use std::net::SocketAddr;

use super::Code;
use crate::restate::{client, listen, serve, Worker};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The Restate server's admin API, to register with (e.g. http://127.0.0.1:9070)
    #[arg(long, value_name = "URL")]
    pub restate: String,
    /// Where to listen for the Restate server (HTTP/2)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9080")]
    pub listen: SocketAddr,
    /// The address the server should call, when it is not http://LISTEN (a load balancer)
    #[arg(long, value_name = "URL")]
    pub advertise: Option<String>,
}

pub fn run(global: &super::Global, args: Args) -> miette::Result<Code> {
    let ctx = super::run::context(global)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| miette::miette!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let listener = listen(args.listen).map_err(|e| miette::miette!("{e}"))?;
        let worker = Worker::new(ctx.project, ctx.agents, ctx.config, ctx.models);
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        let server = tokio::spawn(serve(worker, listener, shutdown));
        let endpoint = args
            .advertise
            .clone()
            .unwrap_or_else(|| format!("http://{}", args.listen));
        client::register(&args.restate, &endpoint)
            .await
            .map_err(|e| {
                miette::miette!(
                    help = "start restate-server first, or check --restate",
                    "{e}"
                )
            })?;
        println!(
            "worker on {} registered with {} as {endpoint}",
            args.listen, args.restate
        );
        let _ = server.await;
        Ok(Code::Clean)
    })
}
