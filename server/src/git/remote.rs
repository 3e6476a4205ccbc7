//! A repository's URL as the server reads it: normalised, so that every
//! spelling of one repository (`…/big`, `…/big/`, `…//big`, `…/./big`,
//! `…/x/../big`, `…/big.git`, a work tree's `…/big/.git`, an upper-case
//! host, a default port written out) is one mirror; and, for a remote on
//! the network, the way git is made to reach exactly the address the
//! destination policy checked ([`route`]).

use std::net::SocketAddr;
use std::time::Duration;

use patchperf_common::api::git;

use crate::destination::Destinations;

/// How git reaches a network remote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `http://`.
    Http,
    /// `https://`.
    Https,
    /// `git://`, the git daemon.
    Git,
    /// `ssh://` or the scp form `host:path`.
    Ssh,
}

impl Scheme {
    fn name(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
            Scheme::Git => "git",
            Scheme::Ssh => "ssh",
        }
    }

    fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
            Scheme::Git => 9418,
            Scheme::Ssh => 22,
        }
    }
}

/// A repository's location, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Remote {
    /// On the server's own disk: an absolute path.
    Local {
        /// The path, `.`, `..` and repeated `/` resolved.
        path: String,
    },
    /// On the network.
    Network {
        /// The transport.
        scheme: Scheme,
        /// `user` or `user:password`, as written (percent-encoded).
        user: Option<String>,
        /// The host: a lower-case name, or an address literal (IPv6 in
        /// brackets).
        host: String,
        /// The port, the scheme's default when none was written.
        port: u16,
        /// The path from its `/`, `.`, `..` and repeated `/` resolved.
        path: String,
    },
}

impl Remote {
    /// Reads `url` (one `git::check_url` accepts); on refusal, says why.
    pub fn parse(url: &str) -> Result<Remote, String> {
        git::check_url(url)?;
        if let Some(path) = url.strip_prefix("file://") {
            return Ok(Remote::Local {
                path: clean_path(path),
            });
        }
        if url.starts_with('/') {
            return Ok(Remote::Local {
                path: clean_path(url),
            });
        }
        let Some((scheme, rest)) = url.split_once("://") else {
            return scp(url);
        };
        if rest.contains(['?', '#']) {
            return Err("a repository URL has no query or fragment".into());
        }
        match scheme {
            "http" | "https" => web(
                url,
                if scheme == "http" {
                    Scheme::Http
                } else {
                    Scheme::Https
                },
            ),
            "git" => authority(Scheme::Git, rest),
            "ssh" => authority(Scheme::Ssh, rest),
            other => Err(format!(
                "scheme `{other}://` is not one the server fetches from"
            )),
        }
    }

    /// The URL git is given: the normalised spelling.
    pub fn url(&self) -> String {
        match self {
            Remote::Local { path } => path.clone(),
            Remote::Network {
                scheme,
                user,
                host,
                port,
                path,
            } => {
                let user = user.as_ref().map_or(String::new(), |u| format!("{u}@"));
                let port = if *port == scheme.default_port() {
                    String::new()
                } else {
                    format!(":{port}")
                };
                format!("{}://{user}{host}{port}{path}", scheme.name())
            }
        }
    }

    /// What names one repository: the URL without a trailing `.git` (a
    /// remote's `big.git` is its `big`) or `/.git` (a work tree's
    /// repository is the work tree's). On the server's disk `big.git` and
    /// `big` are two directories, so only `/.git` goes there.
    pub fn key(&self) -> String {
        let url = self.url();
        let base = url.strip_suffix("/.git").unwrap_or(&url);
        match self {
            Remote::Local { .. } => format!("file://{base}"),
            Remote::Network { .. } => base.strip_suffix(".git").unwrap_or(base).to_string(),
        }
    }

    /// `host:port` of a network remote: what the per-remote bound of git
    /// commands counts by.
    pub fn endpoint(&self) -> Option<String> {
        match self {
            Remote::Local { .. } => None,
            Remote::Network { host, port, .. } => Some(format!("{host}:{port}")),
        }
    }
}

/// `http(s)://…` as a browser reads it (lower-case host, IPv4 written
/// any way made dotted, `.` and `..` resolved, default port dropped), then
/// repeated `/` collapsed.
fn web(url: &str, scheme: Scheme) -> Result<Remote, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
    let host = parsed.host_str().ok_or("no host")?.to_string();
    let user = match (parsed.username(), parsed.password()) {
        ("", None) => None,
        (u, None) => Some(u.to_string()),
        (u, Some(p)) => Some(format!("{u}:{p}")),
    };
    Ok(Remote::Network {
        scheme,
        user,
        host,
        port: parsed
            .port_or_known_default()
            .unwrap_or(scheme.default_port()),
        path: clean_path(parsed.path()),
    })
}

/// `[user@]host[:port]/path` after `git://` or `ssh://`.
fn authority(scheme: Scheme, rest: &str) -> Result<Remote, String> {
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let (user, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u.to_string()), h),
        None => (None, authority),
    };
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (addr, after) = v6.split_once(']').ok_or("an IPv6 address without `]`")?;
        (
            format!("[{}]", addr.to_ascii_lowercase()),
            after.strip_prefix(':'),
        )
    } else {
        match hostport.split_once(':') {
            Some((h, p)) => (h.to_ascii_lowercase(), Some(p)),
            None => (hostport.to_ascii_lowercase(), None),
        }
    };
    let port = match port {
        None | Some("") => scheme.default_port(),
        Some(p) => p.parse().map_err(|_| format!("`{p}` is not a port"))?,
    };
    Ok(Remote::Network {
        scheme,
        user,
        host,
        port,
        path: clean_path(path),
    })
}

/// The scp form `[user@]host:path`: ssh, the path from the login's home
/// unless it starts with `/` (`ssh://host/~/path`).
fn scp(url: &str) -> Result<Remote, String> {
    let (userhost, path) = url.split_once(':').ok_or("no `:` in the scp form")?;
    let path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/~/{path}")
    };
    authority(Scheme::Ssh, &format!("{userhost}{path}"))
}

/// `path` from its `/` with empty and `.` segments dropped and `..`
/// taking the one before it (never above the root), no `/` at the end.
fn clean_path(path: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                kept.pop();
            }
            s => kept.push(s),
        }
    }
    format!("/{}", kept.join("/"))
}

/// What git is given to reach a network remote at the one address
/// checked: its configuration (`GIT_CONFIG_*`) and environment.
#[derive(Debug, Clone, Default)]
pub struct Route {
    /// `name=value` settings for git.
    pub config: Vec<(String, String)>,
    /// Environment variables for git.
    pub env: Vec<(String, String)>,
}

/// Resolves `remote`'s host, keeps the addresses `policy` allows, and
/// connects to them in turn within `connect` each: the first that answers
/// is where git goes, pinned so that git resolves nothing itself (https
/// through curl's resolve list, keeping the name for TLS; git and ssh by
/// rewriting the URL to the address). Redirects are not followed, and a
/// transfer with no byte for `stall` is given up. On failure, why (for
/// the log: the caller tells the client less).
pub async fn route(
    remote: &Remote,
    policy: &Destinations,
    connect: Duration,
    stall: Duration,
) -> Result<Route, String> {
    let Remote::Network {
        scheme, host, port, ..
    } = remote
    else {
        return Ok(Route {
            env: vec![("GIT_ALLOW_PROTOCOL".into(), "file".into())],
            ..Route::default()
        });
    };
    let allowed = policy.resolve(host, *port).await?;
    let mut tried = Vec::new();
    let mut chosen = None;
    for addr in allowed {
        match tokio::time::timeout(connect, tokio::net::TcpStream::connect(addr)).await {
            Ok(Ok(_)) => {
                chosen = Some(addr);
                break;
            }
            Ok(Err(e)) => tried.push(format!("{addr}: {e}")),
            Err(_) => tried.push(format!("{addr}: no answer within {} s", connect.as_secs())),
        }
    }
    let addr = chosen.ok_or_else(|| format!("{host}: {}", tried.join("; ")))?;
    let ip = match addr {
        SocketAddr::V4(a) => a.ip().to_string(),
        SocketAddr::V6(a) => format!("[{}]", a.ip()),
    };
    let mut route = Route::default();
    route
        .env
        .push(("GIT_ALLOW_PROTOCOL".into(), scheme.name().into()));
    let set = |route: &mut Route, name: &str, value: String| {
        route.config.push((name.to_string(), value));
    };
    match scheme {
        Scheme::Http | Scheme::Https => {
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            set(
                &mut route,
                "http.curloptResolve",
                format!("{bare}:{port}:{ip}"),
            );
            set(&mut route, "http.followRedirects", "false".into());
            set(&mut route, "http.lowSpeedLimit", "1".into());
            set(
                &mut route,
                "http.lowSpeedTime",
                stall.as_secs().max(1).to_string(),
            );
        }
        Scheme::Git | Scheme::Ssh => {
            let url = remote.url();
            let mut pinned = remote.clone();
            if let Remote::Network { host, .. } = &mut pinned {
                *host = ip;
            }
            set(&mut route, &format!("url.{}.insteadOf", pinned.url()), url);
            if *scheme == Scheme::Ssh {
                let alive = 15;
                let count = (stall.as_secs() / alive).max(1);
                route.env.push((
                    "GIT_SSH_COMMAND".into(),
                    format!(
                        "ssh -o BatchMode=yes -o ConnectTimeout={} -o ServerAliveInterval={alive} \
                         -o ServerAliveCountMax={count} -o HostKeyAlias={host}",
                        connect.as_secs().max(1)
                    ),
                ));
            }
        }
    }
    Ok(route)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(url: &str) -> String {
        Remote::parse(url).unwrap().key()
    }

    #[test]
    fn every_spelling_of_a_repository_is_one_mirror() {
        let one = key("https://git.example.org/pub/big");
        for url in [
            "https://git.example.org/pub/big/",
            "https://git.example.org//pub//big",
            "https://git.example.org/pub/./big",
            "https://git.example.org/pub/x/../big",
            "https://git.example.org/pub/big.git",
            "https://git.example.org/pub/big/.git",
            "https://GIT.Example.ORG/pub/big",
            "https://git.example.org:443/pub/big",
        ] {
            assert_eq!(key(url), one, "{url}");
        }
        assert_ne!(key("https://git.example.org/pub/other"), one);
        assert_ne!(key("http://git.example.org/pub/big"), one);
        let local = key("/srv/git/big");
        for url in [
            "/srv/git/big/",
            "/srv//git/./big",
            "/srv/x/../git/big",
            "/srv/git/big/.git",
            "file:///srv/git/big",
        ] {
            assert_eq!(key(url), local, "{url}");
        }
        assert_ne!(key("/srv/git/big.git"), local, "two directories");
        assert_eq!(
            key("git@git.example.org:pub/big.git"),
            "ssh://git@git.example.org/~/pub/big"
        );
        assert_eq!(
            key("ssh://git@Git.Example.org:22/srv/big"),
            "ssh://git@git.example.org/srv/big"
        );
    }

    #[test]
    fn git_is_given_the_normalised_url() {
        let r = Remote::parse("https://git.example.org//pub/./big.git/").unwrap();
        assert_eq!(r.url(), "https://git.example.org/pub/big.git");
        // An address written as one number is the address, as curl reads it.
        let r = Remote::parse("http://0x7f000001:8080/x").unwrap();
        assert_eq!(r.url(), "http://127.0.0.1:8080/x");
        assert_eq!(r.endpoint().as_deref(), Some("127.0.0.1:8080"));
        let r = Remote::parse("git://[::1]:9419/x").unwrap();
        assert_eq!(r.url(), "git://[::1]:9419/x");
        assert!(Remote::parse("https://example.org/x?y=1").is_err());
    }

    #[tokio::test]
    async fn a_loopback_remote_is_refused_before_anything_connects() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        for url in [
            format!("http://127.0.0.1:{port}/x"),
            format!("http://0x7f000001:{port}/x"),
            format!("http://localhost:{port}/x"),
            format!("git://127.0.0.1:{port}/x"),
            format!("ssh://git@127.0.0.1:{port}/x"),
        ] {
            let remote = Remote::parse(&url).unwrap();
            let why = route(
                &remote,
                &Destinations::new(false),
                Duration::from_secs(5),
                Duration::from_secs(5),
            )
            .await
            .unwrap_err();
            assert!(why.contains("not a public address"), "{url}: {why}");
        }
        let refused = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
        assert!(refused.is_err(), "nothing connected");
        // Allowed: pinned to the address that answered.
        let remote = Remote::parse(&format!("https://localhost:{port}/x")).unwrap();
        let r = route(
            &remote,
            &Destinations::new(true),
            Duration::from_secs(5),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        assert!(
            r.config
                .iter()
                .any(|(k, v)| k == "http.curloptResolve"
                    && v.starts_with(&format!("localhost:{port}:"))),
            "{r:?}"
        );
        assert!(
            r.config
                .contains(&("http.followRedirects".into(), "false".into()))
        );
    }
}
