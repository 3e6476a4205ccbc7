//! Text answers are compressed for clients that ask (gzip or brotli) and
//! sent as they are to clients that do not, over a real socket.

use patchperf_testkit::TestServer;
use sqlx::PgPool;

/// The raw answer to GET `path` with `accept-encoding` (none when empty):
/// its content-encoding and body bytes.
fn fetch(url: &str, encoding: &str) -> (Option<String>, Vec<u8>) {
    let mut req = ureq::get(url);
    if !encoding.is_empty() {
        req = req.header("accept-encoding", encoding);
    }
    let mut resp = req.call().unwrap();
    let coding = resp
        .headers()
        .get("content-encoding")
        .map(|v| v.to_str().unwrap().to_string());
    (coding, resp.body_mut().read_to_vec().unwrap())
}

#[sqlx::test(migrations = "../migrations")]
async fn text_answers_are_compressed_for_clients_that_ask(pool: PgPool) {
    let server = TestServer::start(pool, "127.0.0.1:0".parse().unwrap()).await;
    let url = format!("{}/api/v1/openapi.json", server.url());
    let (plain, gzip, br) = tokio::task::spawn_blocking(move || {
        (fetch(&url, ""), fetch(&url, "gzip"), fetch(&url, "br"))
    })
    .await
    .unwrap();
    assert_eq!(plain.0, None);
    serde_json::from_slice::<serde_json::Value>(&plain.1).unwrap();
    assert_eq!(gzip.0.as_deref(), Some("gzip"));
    assert_eq!(&gzip.1[..2], &[0x1f, 0x8b], "gzip magic");
    assert_eq!(br.0.as_deref(), Some("br"));
    for (name, body) in [("gzip", &gzip.1), ("br", &br.1)] {
        assert!(
            body.len() * 4 < plain.1.len(),
            "{name}: {} bytes of {}",
            body.len(),
            plain.1.len()
        );
    }
    server.stop().await;
}
