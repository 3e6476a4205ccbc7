//! Debian's headless Chromium driving real pages: the app served on a
//! loopback socket, each page loaded with `--dump-dom` (the DOM after the
//! page's scripts ran, with a virtual-time budget so fetches complete).

use std::path::PathBuf;
use std::time::Duration;

use patchperf_server::{AppState, app};

/// The browser binary.
pub struct Chromium {
    path: PathBuf,
}

impl Chromium {
    /// `/usr/bin/chromium` (Debian's package), if installed.
    pub fn find() -> Option<Self> {
        let path = PathBuf::from("/usr/bin/chromium");
        path.exists().then_some(Chromium { path })
    }

    /// The DOM of `url` after its scripts ran.
    pub async fn dump_dom(&self, url: &str) -> String {
        let profile = tempfile::tempdir().unwrap();
        let out = tokio::time::timeout(
            Duration::from_secs(120),
            tokio::process::Command::new(&self.path)
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--virtual-time-budget=3000",
                ])
                .arg(format!("--user-data-dir={}", profile.path().display()))
                .arg("--dump-dom")
                .arg(url)
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("chromium took more than 120 s")
        .expect("chromium could not start");
        let dom = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            dom.contains("<html"),
            "chromium printed no DOM for {url}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        dom
    }
}

/// Serves the app on a free loopback port for the rest of the test; returns
/// its base URL.
pub async fn serve(state: AppState) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app(state)).await.unwrap();
    });
    format!("http://{addr}")
}

/// The text a user sees: tags, scripts and styles removed, entities of the
/// kinds our templates write decoded.
pub fn visible_text(dom: &str) -> String {
    let mut text = String::new();
    let mut rest = dom;
    while let Some(start) = rest.find('<') {
        text.push_str(&rest[..start]);
        let tag = &rest[start..];
        let skip_to = ["<script", "<style", "<svg"]
            .iter()
            .find(|t| tag.starts_with(**t))
            .map(|t| format!("</{}>", &t[1..]));
        let end = match skip_to {
            Some(close) => tag.find(&close).map_or(tag.len(), |i| i + close.len()),
            None => tag.find('>').map_or(tag.len(), |i| i + 1),
        };
        // Inline elements do not separate words; everything else does.
        let name = tag[1..]
            .trim_start_matches('/')
            .split(|c: char| !c.is_ascii_alphanumeric())
            .next()
            .unwrap_or("");
        if !matches!(name, "a" | "b" | "i" | "em" | "strong" | "span" | "code") {
            text.push(' ');
        }
        rest = &tag[end..];
    }
    text.push_str(rest);
    text.replace("&lt;", "<")
        .replace("&#60;", "<")
        .replace("&#62;", ">")
        .replace("&#38;", "&")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}
