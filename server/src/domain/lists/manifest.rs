//! An archive's grokmirror manifest (`<archive>/manifest.js.gz`, served by
//! public-inbox and by lore for every inbox): gzipped JSON keyed by each
//! epoch's path (`/linux-fsdevel/git/17.git`), each with a `fingerprint`
//! that changes whenever the epoch's refs do. One small request a round
//! tells the reader which epochs there are and which changed, so an
//! unchanged epoch is neither fetched nor read, and a new epoch is found
//! without trying to clone one that may not exist. An archive without a
//! manifest (a v1 inbox, a plain git mirror, a path) is read as before.
//!
//! The manifest comes from a remote anyone may name: its host must be one
//! the server may reach (the same policy as git remotes and webhooks, also
//! when it connects), no redirect is followed, and both its compressed
//! and its unpacked size are bounded.

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

use crate::destination::{self, Destinations};
use crate::{Error, domain::Context};

/// Most bytes of a manifest as sent: lore's whole-site manifest, all
/// inboxes, is about 300 KiB; one inbox's a few KiB.
const MAX_COMPRESSED: usize = 4 << 20;

/// Most bytes of a manifest unpacked.
const MAX_UNPACKED: u64 = 32 << 20;

/// How long the request may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Most epochs taken from a manifest (lore's LKML has 18).
const MAX_EPOCHS: usize = 1000;

/// Longest fingerprint kept (grokmirror's are 40 hex digits).
const MAX_FINGERPRINT: usize = 128;

/// The epochs a manifest lists: each epoch's fingerprint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// Epoch number → fingerprint.
    pub epochs: BTreeMap<i32, String>,
}

impl Manifest {
    /// Epoch `epoch`'s fingerprint, when the manifest lists it.
    pub fn fingerprint(&self, epoch: i32) -> Option<&str> {
        self.epochs.get(&epoch).map(String::as_str)
    }

    /// The newest epoch listed.
    pub fn newest(&self) -> Option<i32> {
        self.epochs.keys().next_back().copied()
    }

    /// Reads a manifest's unpacked JSON: every key ending in
    /// `/git/<N>.git` whose value has a string `fingerprint`. `None` when it
    /// is not a JSON object or lists no epoch.
    pub fn parse(json: &[u8]) -> Option<Manifest> {
        let all: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(json).ok()?;
        let mut epochs = BTreeMap::new();
        for (key, value) in &all {
            let Some(n) = key
                .rsplit_once("/git/")
                .and_then(|(_, tail)| tail.strip_suffix(".git"))
                .filter(|n| !n.is_empty() && n.len() <= 6 && n.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let Some(fingerprint) = value.get("fingerprint").and_then(|f| f.as_str()) else {
                continue;
            };
            let clean = (1..=MAX_FINGERPRINT).contains(&fingerprint.len())
                && fingerprint.bytes().all(|b| b.is_ascii_alphanumeric());
            if clean && epochs.len() < MAX_EPOCHS {
                epochs.insert(n, fingerprint.to_string());
            }
        }
        (!epochs.is_empty()).then_some(Manifest { epochs })
    }
}

/// The manifest of the archive at `archive` (an http(s) URL without a
/// trailing `/`): `None` when it has none (not served over HTTP, 404, not
/// a manifest); an error when it could not be asked (a refused or silent
/// host), which the read reports and works around by asking git.
pub async fn read(ctx: &Context, archive: &str) -> Result<Option<Manifest>, Error> {
    if !(archive.starts_with("http://") || archive.starts_with("https://")) {
        return Ok(None);
    }
    let url = format!("{archive}/manifest.js.gz");
    let parsed = reqwest::Url::parse(&url)
        .map_err(|e| Error::Invalid(format!("{url:?} is not a URL: {e}")))?;
    let host = parsed
        .host_str()
        .ok_or_else(|| Error::Invalid(format!("{url:?} has no host")))?;
    let policy = Destinations::new(ctx.config.allow_private_destinations);
    // An address literal meets no resolver: checked here; a name is
    // checked again by the client's resolver when it connects.
    policy
        .resolve(host, parsed.port_or_known_default().unwrap_or(80))
        .await
        .map_err(|why| Error::Invalid(format!("the archive's host is refused: {why}")))?;
    let client = destination::client(policy, TIMEOUT)
        .map_err(|e| Error::Internal(format!("the manifest's client: {e}")))?;
    let unavailable = |why: String| Error::Unavailable {
        message: format!("the archive's manifest: {why}"),
        retry_after: None,
    };
    let mut response = client
        .get(parsed)
        .send()
        .await
        .map_err(|e| unavailable(e.to_string()))?;
    if !response.status().is_success() {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| unavailable(e.to_string()))?
    {
        if body.len() + chunk.len() > MAX_COMPRESSED {
            return Err(Error::TooLarge(format!(
                "the archive's manifest is more than {MAX_COMPRESSED} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(unpack(&body).and_then(|json| Manifest::parse(&json)))
}

/// A gzipped body unpacked, at most [`MAX_UNPACKED`] bytes; `None` when it
/// is not gzip or unpacks to more.
fn unpack(gz: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .take(MAX_UNPACKED + 1)
        .read_to_end(&mut out)
        .ok()?;
    (out.len() as u64 <= MAX_UNPACKED).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn epochs_and_fingerprints_are_read_and_the_rest_ignored() {
        let json = br#"{
            "/lkml/git/0.git": {"fingerprint": "8f3c0a", "modified": 1, "reference": null},
            "/lkml/git/17.git": {"fingerprint": "deadbeef", "owner": "x"},
            "/lkml/git/x.git": {"fingerprint": "aa"},
            "/lkml/all.git": {"fingerprint": "bb"},
            "/lkml/git/2.git": {"fingerprint": "a b\nc"},
            "/lkml/git/3.git": {"modified": 3}
        }"#;
        let m = Manifest::parse(&unpack(&gz(json)).unwrap()).unwrap();
        assert_eq!(m.fingerprint(0), Some("8f3c0a"));
        assert_eq!(m.fingerprint(17), Some("deadbeef"));
        assert_eq!(m.epochs.len(), 2, "{m:?}");
        assert_eq!(m.newest(), Some(17));
    }

    #[test]
    fn what_is_not_a_manifest_is_none() {
        assert_eq!(unpack(b"not gzip"), None);
        assert_eq!(Manifest::parse(b"[1, 2]"), None);
        assert_eq!(Manifest::parse(b"{}"), None);
        // A gzip bomb is cut at the bound.
        let bomb = gz(&vec![b' '; (MAX_UNPACKED + 10) as usize]);
        assert!(bomb.len() < MAX_COMPRESSED);
        assert_eq!(unpack(&bomb), None);
    }

    proptest::proptest! {
        /// Any object of keys and values: parsing never panics, and what
        /// it keeps is an epoch of the key and a clean fingerprint.
        #[test]
        fn any_object_parses_to_clean_epochs(
            entries in proptest::collection::vec(
                ("[/a-z0-9.]{0,6}/git/[0-9x]{0,8}\\.git|[ -~]{0,20}", "[ -~\\n]{0,20}", 0..3u8),
                0..20,
            ),
        ) {
            let mut object = serde_json::Map::new();
            for (key, value, shape) in &entries {
                let v = match shape {
                    0 => serde_json::json!({"fingerprint": value}),
                    1 => serde_json::json!({"fingerprint": 7}),
                    _ => serde_json::json!(value),
                };
                object.insert(key.clone(), v);
            }
            let json = serde_json::to_vec(&object).unwrap();
            if let Some(m) = Manifest::parse(&json) {
                for (n, f) in &m.epochs {
                    proptest::prop_assert!(*n >= 0);
                    let named = object.keys().any(|k| {
                        k.rsplit_once("/git/")
                            .and_then(|(_, t)| t.strip_suffix(".git"))
                            .and_then(|t| t.parse::<i32>().ok())
                            == Some(*n)
                    });
                    proptest::prop_assert!(named, "epoch {} from no key", n);
                    proptest::prop_assert!(!f.is_empty() && f.bytes().all(|b| b.is_ascii_alphanumeric()));
                }
            }
            let _ = unpack(&json);
        }
    }
}
