//! The app served on a loopback port, for tests that need a real socket (the
//! runner's client, a browser), and tokens minted straight into a database.

use std::net::SocketAddr;

use patchperf_server::domain::tokens::TokenKind;
use patchperf_server::domain::tokens::create as create_token;
use patchperf_server::{AppState, Config};
use sqlx::PgPool;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// The server, served on a loopback port until stopped or dropped.
#[derive(Debug)]
pub struct TestServer {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl TestServer {
    /// Serves the app over `pool` with the default configuration on `addr`
    /// (port 0 for any free port).
    pub async fn start(pool: PgPool, addr: SocketAddr) -> TestServer {
        Self::serve(AppState::new(pool, Config::default()), addr).await
    }

    /// Serves the app on `state` on `addr`, with every background worker
    /// `serve` runs (`domain::spawn_workers`).
    pub async fn serve(state: AppState, addr: SocketAddr) -> TestServer {
        // `PATCHPERF_TEST_LOG=warn` (a tracing filter) prints the server's
        // log: the reason behind a 500 that a test's client only sees as
        // "internal server error".
        if let Ok(filter) = std::env::var("PATCHPERF_TEST_LOG") {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
                .with_writer(std::io::stderr)
                .try_init();
        }
        patchperf_server::domain::spawn_workers(&state).unwrap();
        let listener = TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = patchperf_server::app(state);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    // A stop, or the TestServer dropped.
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        TestServer { addr, stop, task }
    }

    /// Stops serving and waits until the server is gone.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap();
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

/// A fresh token of `kind`.
pub async fn token(pool: &PgPool, kind: TokenKind) -> String {
    let mut conn = pool.acquire().await.unwrap();
    create_token(&mut conn, kind, &format!("test-{kind}"))
        .await
        .unwrap()
        .token
}

/// The URL of `pool`'s database (a fresh one from `#[sqlx::test]`), for a
/// `patchperf-server` binary the test starts on it.
pub fn database_url(pool: &PgPool) -> String {
    let o = pool.connect_options();
    format!(
        "postgres://{}@{}:{}/{}",
        o.get_username(),
        o.get_host(),
        o.get_port(),
        o.get_database().unwrap_or("postgres")
    )
}

/// A loopback port free when asked (for a server the test starts).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
