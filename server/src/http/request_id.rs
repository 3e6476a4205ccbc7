//! One id per HTTP request, in the `x-request-id` header both ways and in
//! the request's log span, so that every line the domain logs while
//! answering it (`--log-format json` prints the span's fields with each
//! event) can be found from the answer a user got. An id a proxy in front
//! already gave is kept when it is a plain token; anything else is
//! replaced, since it goes into logs.

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use rand::Rng;

/// The header, as load balancers and proxies name it.
pub static HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// Longest id kept from a client or a proxy.
const MAX_LEN: usize = 64;

/// Whether a given id is safe to keep: short, and letters, digits, `-`,
/// `_`, `.` only.
fn acceptable(id: &[u8]) -> bool {
    !id.is_empty()
        && id.len() <= MAX_LEN
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A new id: 64 random bits in hex.
fn fresh() -> HeaderValue {
    let bits: u64 = rand::rng().random();
    HeaderValue::from_str(&format!("{bits:016x}")).expect("hex is a valid header value")
}

/// The request's id: the one it came with when acceptable, else a new one.
pub fn of(req: &Request) -> HeaderValue {
    match req.headers().get(&HEADER) {
        Some(given) if acceptable(given.as_bytes()) => given.clone(),
        _ => fresh(),
    }
}

/// Middleware (outside the trace layer, which reads the header into its
/// span): sets the request's id and returns it with the answer.
pub async fn assign(mut req: Request, next: Next) -> Response {
    let id = of(&req);
    req.headers_mut().insert(HEADER.clone(), id.clone());
    let mut response = next.run(req).await;
    response.headers_mut().insert(HEADER.clone(), id);
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn with(id: &[u8]) -> Request {
        let mut req = Request::new(axum::body::Body::empty());
        if let Ok(v) = HeaderValue::from_bytes(id) {
            req.headers_mut().insert(HEADER.clone(), v);
        }
        req
    }

    #[test]
    fn a_proxys_plain_id_is_kept_and_anything_else_replaced() {
        assert_eq!(of(&with(b"lb-4f2a.9")), "lb-4f2a.9");
        for bad in [&b"a b"[..], b"x\"y", b"{\"json\":1}", &[b'a'; 65]] {
            let id = of(&with(bad));
            assert_ne!(id.as_bytes(), bad);
            assert!(acceptable(id.as_bytes()));
        }
        assert!(acceptable(
            of(&Request::new(axum::body::Body::empty())).as_bytes()
        ));
    }

    proptest! {
        #[test]
        fn every_id_assigned_is_acceptable(given in proptest::collection::vec(any::<u8>(), 0..100)) {
            let id = of(&with(&given));
            prop_assert!(acceptable(id.as_bytes()));
        }
    }
}
