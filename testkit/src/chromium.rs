//! Debian's headless Chromium loading real pages: each page loaded with
//! `--dump-dom` (the DOM after the page's scripts ran, with a virtual-time
//! budget so fetches complete), or measured in a viewport of a chosen size
//! through the DevTools protocol (`devtools`).

mod devtools;

pub use devtools::Viewport;

use std::path::PathBuf;
use std::time::Duration;

/// How every test runs the browser: headless, quiet, nothing fetched
/// from the network on its own.
const HEADLESS: [&str; 8] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];

/// The browser binary.
#[derive(Debug)]
pub struct Chromium {
    path: PathBuf,
}

impl Chromium {
    /// `/usr/bin/chromium` (Debian's package), if installed.
    pub fn find() -> Option<Self> {
        let path = PathBuf::from("/usr/bin/chromium");
        path.exists().then_some(Chromium { path })
    }

    /// The DOM of the HTML page at `url` after its scripts ran.
    pub async fn dump_dom(&self, url: &str) -> String {
        self.dump(url, "<html").await
    }

    /// The document of the SVG image at `url`.
    pub async fn dump_svg(&self, url: &str) -> String {
        self.dump(url, "<svg").await
    }

    /// The JSON value of the JavaScript `expression` in the page at `url`
    /// once it loaded in a `viewport` (a phone's below 600 px wide, so the
    /// page's viewport meta applies). The browser runs on a blocking thread,
    /// so a server on this runtime keeps answering it; it is killed after
    /// 120 s.
    pub async fn evaluate(
        &self,
        url: &str,
        viewport: Viewport,
        expression: &str,
    ) -> serde_json::Value {
        let (path, url, expression) = (self.path.clone(), url.to_string(), expression.to_string());
        tokio::task::spawn_blocking(move || devtools::evaluate(&path, &url, viewport, &expression))
            .await
            .unwrap_or_else(|e| match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(e) => panic!("the browser's thread: {e}"),
            })
    }

    /// Loads `url`; Chromium must exit well and print a document with
    /// `expected` in it.
    async fn dump(&self, url: &str, expected: &str) -> String {
        let profile = tempfile::tempdir().unwrap();
        let out = tokio::time::timeout(
            Duration::from_secs(120),
            tokio::process::Command::new(&self.path)
                .args(HEADLESS)
                .arg("--virtual-time-budget=3000")
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
            out.status.success() && dom.contains(expected),
            "chromium ({}) printed no {expected} document for {url}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        dom
    }
}
