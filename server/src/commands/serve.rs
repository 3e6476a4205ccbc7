//! `patchperf-server serve`: open the database, start the background tasks,
//! serve until SIGINT/SIGTERM, then stop cleanly (the private Postgres
//! last).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpListener;

use super::database::Database;
use crate::cli::serve::ServeArgs;
use crate::domain;
use crate::postgres::Create;
use crate::{AppState, Config, Error, http};

/// Runs `serve`.
pub async fn run(args: ServeArgs) -> Result<(), Error> {
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        "patchperf-server starting"
    );
    let database = Database::open(&args.db, Create::IfMissing).await?;
    let config = Config {
        lease: args.lease,
        max_attempts: args.max_attempts.max(1),
        body_limit: args.body_limit,
        public_url: args.public_url.clone(),
        private_reads: args.private,
        local_git: args.local_git,
        git_timeout: args.git_timeout,
        git_stall_timeout: args.git_stall,
        git_jobs: args.git_jobs as usize,
        git_jobs_per_remote: args.git_jobs_per_remote as usize,
        git_cache_max_bytes: args.git_cache_max_bytes,
        prune_after: (!args.prune_after.is_zero()).then_some(args.prune_after),
        allow_private_destinations: args.allow_private_destinations,
        smtp_url: args.smtp_url.clone(),
        mail_from: args.mail_from.clone(),
        calibration_max_age: args.calibration_max_age,
        auto_calibrate: !args.no_auto_calibrate,
        ..Config::default()
    };
    let config = match &args.git_dir {
        Some(dir) => Config {
            git_dir: dir.clone(),
            ..config
        },
        None => config,
    };
    if let Err(e) = writable(&config.git_dir) {
        database.close().await;
        return Err(e);
    }
    let state = AppState::new(database.pool.clone(), config);
    if let Err(e) = domain::spawn_workers(&state) {
        database.close().await;
        return Err(e);
    }

    let result = serve(&state, &args, database.private_pid_file()).await;
    // No git command outlives the server (those of requests still open
    // were killed when the shutdown began).
    state.git.stop();
    database.close().await;
    result
}

async fn serve(
    state: &AppState,
    args: &ServeArgs,
    private_postgres: Option<std::path::PathBuf>,
) -> Result<(), Error> {
    let listener = bind(args.listen).await?;
    tracing::info!(
        private_reads = state.config.private_reads,
        "listening on http://{}",
        local(&listener)?
    );
    let exporter = match args.metrics_listen {
        Some(addr) => {
            let listener = bind(addr).await?;
            tracing::info!("serving /metrics on http://{}", local(&listener)?);
            let mut stopped = state.shutting_down.subscribe();
            let app = http::prometheus::exporter(state.clone());
            Some(tokio::spawn(async move {
                axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = stopped.wait_for(|stopping| *stopping).await;
                    })
                    .await
            }))
        }
        None => None,
    };
    let stopping = state.clone();
    let (died_tx, mut died) = tokio::sync::oneshot::channel();
    let served = axum::serve(listener, crate::app(state.clone()))
        .with_graceful_shutdown(async move {
            tokio::select! {
                () = shutdown_signal() => {}
                () = postgres_died(private_postgres) => {
                    let _ = died_tx.send(());
                }
            }
            stopping.begin_shutdown();
            // A request waiting on git (a clone of minutes) must not hold
            // the shutdown: its git is killed and it answers at once.
            stopping.git.stop();
        })
        .await
        .map_err(|e| Error::Setup(format!("server failed: {e}")))
        .and_then(|()| match died.try_recv() {
            // Exits unsuccessfully, so the service manager starts the
            // server again, and with it the cluster: serving 503 until
            // someone notices is the outage nobody's monitoring sees.
            Ok(()) => Err(Error::Setup(
                "the private Postgres stopped under the server; exiting so that it is started \
                 again with the server"
                    .into(),
            )),
            Err(_) => Ok(()),
        });
    // The exporter stops with the server (a failed main listener included).
    state.begin_shutdown();
    if let Some(exporter) = exporter {
        match exporter.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "the /metrics listener failed"),
            Err(e) => tracing::warn!(error = %e, "the /metrics listener panicked"),
        }
    }
    served
}

async fn bind(addr: SocketAddr) -> Result<TcpListener, Error> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Setup(format!("cannot listen on {addr}: {e}")))
}

fn local(listener: &TcpListener) -> Result<SocketAddr, Error> {
    listener
        .local_addr()
        .map_err(|e| Error::Setup(format!("listening socket: {e}")))
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
    tracing::info!("shutting down");
}

/// Checks at start that the mirrors' directory can be written (made when
/// missing), so an unusable `--git-dir` stops the server naming it instead
/// of answering the first tree or range 500.
fn writable(dir: &std::path::Path) -> Result<(), Error> {
    let unusable = |e: std::io::Error| {
        Error::Setup(format!(
            "--git-dir {}: this user cannot write there ({e}); give a directory the \
             server's user owns",
            dir.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(unusable)?;
    tempfile::tempfile_in(dir).map_err(unusable)?;
    Ok(())
}

/// Resolves when the private cluster's postmaster (its `pid_file`) is gone
/// for two looks in a row, 2 s apart; never for a database given by URL.
async fn postgres_died(pid_file: Option<std::path::PathBuf>) {
    let Some(pid_file) = pid_file else {
        return std::future::pending().await;
    };
    let mut missed = 0;
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        if crate::postgres::postmaster_alive(&pid_file) {
            missed = 0;
        } else {
            missed += 1;
            if missed >= 2 {
                tracing::error!(pid_file = %pid_file.display(), "the private Postgres stopped");
                return;
            }
        }
    }
}
