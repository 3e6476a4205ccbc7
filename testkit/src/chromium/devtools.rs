//! One page measured through the Chrome DevTools Protocol over
//! `--remote-debugging-pipe`: the browser reads NUL-terminated JSON commands
//! on its fd 3 and writes answers and events on its fd 4. `--dump-dom` has
//! no viewport and runs no expression, so layout (widths, what is above the
//! fold) can only be read this way.
//!
//! All of it is blocking I/O with a deadline: every read and write waits in
//! `poll` for at most what is left of the session's time, and past it the
//! browser is killed, so a hung Chromium fails the test instead of holding it.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A page's viewport in CSS pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Viewport {
    pub width: u32,
    pub height: u32,
}

/// How long one session (start, load, evaluate, close) may take.
const SESSION_LIMIT: Duration = Duration::from_secs(120);

/// Loads `url` in a fresh headless `browser` with the `viewport`, waits for
/// its load event and returns the JSON value of `expression` there. Panics
/// (after killing the browser) on any failure, with what Chromium said.
pub fn evaluate(browser: &Path, url: &str, viewport: Viewport, expression: &str) -> Value {
    let profile = tempfile::tempdir().unwrap();
    let stderr_path = profile.path().join("chromium.stderr");
    let mut session = Session::start(browser, profile.path(), &stderr_path);
    let outcome = session.measure(url, viewport, expression);
    let stderr = || std::fs::read_to_string(&stderr_path).unwrap_or_default();
    match outcome {
        Ok(value) => {
            session.close();
            value
        }
        Err(e) => {
            session.kill();
            panic!(
                "chromium: {url} at {viewport:?}: {e}\nits stderr:\n{}",
                stderr()
            )
        }
    }
}

/// A running browser and the parent's ends of its two pipes.
struct Session {
    child: Child,
    /// Where commands go (the browser's fd 3).
    commands: File,
    /// Where answers and events come from (the browser's fd 4).
    answers: File,
    /// Bytes read past the last whole message.
    pending: Vec<u8>,
    /// Events read while waiting for an answer, oldest first.
    events: Vec<Value>,
    next_id: u64,
    deadline: Instant,
}

type Result<T> = std::result::Result<T, String>;

impl Session {
    fn start(browser: &Path, profile: &Path, stderr_path: &Path) -> Session {
        let (browser_reads, commands) = pipe();
        let (answers, browser_writes) = pipe();
        // The parent's ends do not block, so each read and write can wait
        // in poll with the deadline instead.
        set_nonblocking(&commands);
        set_nonblocking(&answers);
        let child_in = browser_reads.as_raw_fd();
        let child_out = browser_writes.as_raw_fd();
        let mut command = Command::new(browser);
        command
            .args(super::HEADLESS)
            .args(["--hide-scrollbars", "--remote-debugging-pipe"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(stderr_path).unwrap());
        // SAFETY: the closure runs in the forked child before exec and calls
        // only fcntl and dup2, which are async-signal-safe; it allocates
        // nothing and touches no lock.
        unsafe {
            command.pre_exec(move || {
                // Copies above 10 first: dup2 onto 3 or 4 could otherwise
                // close the other pipe end if it happens to be 3 or 4. The
                // copies close on exec; dup2's targets do not.
                let high_in = dup_above(child_in, 10)?;
                let high_out = dup_above(child_out, 10)?;
                for (from, to) in [(high_in, 3), (high_out, 4)] {
                    if libc::dup2(from, to) < 0 {
                        return Err(io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("chromium could not start");
        // The browser holds its ends now; closing ours lets a dead browser
        // show as end of file.
        drop((browser_reads, browser_writes));
        Session {
            child,
            commands: File::from(commands),
            answers: File::from(answers),
            pending: Vec::new(),
            events: Vec::new(),
            next_id: 0,
            deadline: Instant::now() + SESSION_LIMIT,
        }
    }

    /// The protocol's steps for one page: a tab, its viewport, the load,
    /// the expression.
    fn measure(&mut self, url: &str, viewport: Viewport, expression: &str) -> Result<Value> {
        let target = self.call(None, "Target.createTarget", json!({ "url": "about:blank" }))?;
        let target_id = target["targetId"].clone();
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target_id, "flatten": true }),
        )?;
        let session_id = attached["sessionId"]
            .as_str()
            .ok_or_else(|| format!("attachToTarget gave no sessionId: {attached}"))?
            .to_string();
        let session = Some(session_id.as_str());
        self.call(
            session,
            "Emulation.setDeviceMetricsOverride",
            json!({
                "width": viewport.width,
                "height": viewport.height,
                "deviceScaleFactor": 1,
                // Below 600 px it is a phone: the page's viewport meta applies.
                "mobile": viewport.width < 600,
            }),
        )?;
        self.call(session, "Page.enable", json!({}))?;
        // A load event of about:blank must not count as the page's.
        self.events.clear();
        let navigated = self.call(session, "Page.navigate", json!({ "url": url }))?;
        if let Some(error) = navigated.get("errorText") {
            return Err(format!("navigation failed: {error}"));
        }
        self.wait_event(&session_id, "Page.loadEventFired")?;
        let evaluated = self.call(
            session,
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        )?;
        if let Some(exception) = evaluated.get("exceptionDetails") {
            return Err(format!("`{expression}` threw: {exception}"));
        }
        Ok(evaluated["result"]
            .get("value")
            .cloned()
            .unwrap_or(Value::Null))
    }

    /// Sends one command and returns its result, keeping the events that
    /// arrive before it.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        let mut bytes = message.to_string().into_bytes();
        bytes.push(0);
        self.write_all(&bytes)?;
        loop {
            let message = self.read_message()?;
            if message["id"] == id {
                if let Some(error) = message.get("error") {
                    return Err(format!("{method}: {error}"));
                }
                return Ok(message["result"].clone());
            }
            if message.get("method").is_some() {
                self.events.push(message);
            }
        }
    }

    /// Waits for the event `method` of the session `session_id`.
    fn wait_event(&mut self, session_id: &str, method: &str) -> Result<()> {
        let matches = |e: &Value| e["method"] == method && e["sessionId"] == session_id;
        if self.events.iter().any(matches) {
            return Ok(());
        }
        loop {
            let message = self.read_message()?;
            if matches(&message) {
                return Ok(());
            }
        }
    }

    /// The next NUL-terminated message from the browser.
    fn read_message(&mut self) -> Result<Value> {
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == 0) {
                let message: Vec<u8> = self.pending.drain(..=end).collect();
                let text = &message[..end];
                return serde_json::from_slice(text)
                    .map_err(|e| format!("not JSON ({e}): {}", String::from_utf8_lossy(text)));
            }
            self.wait_ready(self.answers.as_raw_fd(), libc::POLLIN)?;
            let mut buf = [0u8; 65536];
            match self.answers.read(&mut buf) {
                Ok(0) => return Err("the browser closed its pipe (it exited?)".into()),
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("reading from the browser: {e}")),
            }
        }
    }

    fn write_all(&mut self, mut bytes: &[u8]) -> Result<()> {
        while !bytes.is_empty() {
            self.wait_ready(self.commands.as_raw_fd(), libc::POLLOUT)?;
            match self.commands.write(bytes) {
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("writing to the browser: {e}")),
            }
        }
        Ok(())
    }

    /// Waits until `fd` is ready for `events`, or fails at the deadline.
    fn wait_ready(&self, fd: RawFd, events: libc::c_short) -> Result<()> {
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("took more than {} s", SESSION_LIMIT.as_secs()));
            }
            let mut pfd = libc::pollfd {
                fd,
                events,
                revents: 0,
            };
            let ms = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
            // SAFETY: `pfd` is one valid pollfd that lives across the call.
            let ready = unsafe { libc::poll(&mut pfd, 1, ms.max(1)) };
            if ready > 0 {
                // Readiness, a hang-up or an error: the read or write says which.
                return Ok(());
            }
            if ready < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(format!("poll: {e}"));
                }
            }
        }
    }

    /// Asks the browser to close, and kills it if it has not exited within
    /// a few seconds (or by the deadline).
    fn close(mut self) {
        let _ = self.call(None, "Browser.close", json!({}));
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until.min(self.deadline) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Session {
    /// No browser outlives its session, even when a step panicked.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}

/// A pipe (read end, write end), both close-on-exec.
fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a writable array of two ints, as pipe2 expects.
    let done = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(done, 0, "pipe2: {}", io::Error::last_os_error());
    // SAFETY: pipe2 just returned these two descriptors; nothing else owns them.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

fn set_nonblocking(fd: &OwnedFd) {
    // SAFETY: fcntl on a descriptor we own, reading then setting its flags.
    let done = unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK)
    };
    assert!(done >= 0, "fcntl: {}", io::Error::last_os_error());
}

/// A close-on-exec copy of `fd` numbered `min` or above. Async-signal-safe
/// (it runs between fork and exec).
fn dup_above(fd: RawFd, min: RawFd) -> io::Result<RawFd> {
    // SAFETY: F_DUPFD_CLOEXEC only reads `fd` and makes a new descriptor.
    let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, min) };
    if copy < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(copy)
    }
}

#[cfg(test)]
mod tests {
    use super::Viewport;
    use crate::chromium::Chromium;

    /// A page of `body` that takes the device's width, as ours do.
    fn page(body: &str) -> String {
        format!(
            "data:text/html,<!DOCTYPE html><meta name=viewport content='width=device-width, initial-scale=1'>\
             <body style='margin:0'>{body}"
        )
    }

    #[tokio::test]
    async fn an_expression_is_evaluated_in_a_viewport_of_the_size_asked() {
        let Some(chromium) = Chromium::find() else {
            eprintln!("skipping: /usr/bin/chromium is not installed");
            return;
        };
        let phone = Viewport {
            width: 390,
            height: 844,
        };
        let two = chromium.evaluate(&page("x"), phone, "1+1").await;
        assert_eq!(two, serde_json::json!(2));

        // A 1000 px block overflows a phone's 390 px: the page is as wide
        // as the block (a pixel more where the phone zooms out to show it
        // all), while its layout viewport stays the phone's.
        let wide = page("<div style='width:1000px;height:10px'></div>");
        let sizes = chromium
            .evaluate(
                &wide,
                phone,
                "[document.documentElement.clientWidth, document.documentElement.clientHeight, \
                 document.documentElement.scrollWidth]",
            )
            .await;
        assert!(sizes[0] == 390 && sizes[1] == 844, "{sizes}");
        let width = sizes[2].as_f64().unwrap();
        assert!((1000.0..1002.0).contains(&width), "{sizes}");

        // On a desktop the same page fits, and a box's place is measured.
        let desktop = Viewport {
            width: 1400,
            height: 900,
        };
        let tall =
            page("<div style='height:850px'></div><p id=p style='margin:0;height:100px'>x</p>");
        let measured = chromium
            .evaluate(
                &tall,
                desktop,
                "(() => { const r = document.getElementById('p').getBoundingClientRect(); \
                 return [document.documentElement.scrollWidth, r.top, r.bottom, innerWidth]; })()",
            )
            .await;
        assert_eq!(
            measured,
            serde_json::json!([1400, 850, 950, 1400]),
            "{measured}"
        );
    }

    #[tokio::test]
    #[should_panic(expected = "threw")]
    async fn an_expression_that_throws_fails_the_test() {
        let Some(chromium) = Chromium::find() else {
            panic!("threw: skipped, /usr/bin/chromium is not installed");
        };
        let viewport = Viewport {
            width: 800,
            height: 600,
        };
        chromium
            .evaluate(&page("x"), viewport, "no_such_name.length")
            .await;
    }
}
