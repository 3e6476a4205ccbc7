//! Shared by the tests that talk to a real patchperf server (`agent.rs`,
//! `submit.rs`): the server app served on a loopback port over the test's
//! own Postgres database, and tokens minted straight into that database.

use std::net::SocketAddr;

use patchperf_server::auth::TokenKind;
use patchperf_server::routes::tokens::create_token;
use patchperf_server::{AppState, Config};
use sqlx::PgPool;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// The server, served on a loopback port until stopped.
pub struct TestServer {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl TestServer {
    /// Serves the app on `addr` (port 0 for any free port).
    pub async fn start(pool: PgPool, addr: SocketAddr) -> TestServer {
        let listener = TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = patchperf_server::app(AppState::new(pool, Config::default()));
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
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
    #[allow(dead_code)] // not every test binary restarts a server on the same port
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
