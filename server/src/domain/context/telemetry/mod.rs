//! What this server counts about itself for Prometheus: the instruments
//! that live as long as the server (HTTP requests by route and status with
//! their latency, report builds and their duration), and the exposition
//! that `GET /metrics` serves ([`scrape`]), which adds what the database
//! and the workers know at the moment of the scrape.
//!
//! The registry is this server's own, not a process-wide recorder: tests
//! run many servers in one process, and each must count only itself.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

pub mod classic;
pub mod process;
pub mod scrape;

/// The media type of the exposition (OpenMetrics text, which Prometheus
/// asks for first and parses since 2.5).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// One HTTP request as counted.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// `GET`, `POST`, …
    pub method: String,
    /// The route as declared (`/api/v1/comparisons/{id}`), never the path
    /// asked for, so that the series stay few; `unmatched` for the
    /// fallback.
    pub route: String,
    /// The answer's status code.
    pub status: u16,
}

/// A route's latency as measured.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    /// As in [`RequestLabels`].
    pub method: String,
    /// As in [`RequestLabels`].
    pub route: String,
}

type HistogramOf = fn() -> Histogram;

/// The instruments; shared by every clone of the context.
#[derive(Debug)]
pub struct Telemetry {
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram, HistogramOf>,
    report_builds: Counter,
    report_seconds: Histogram,
}

/// 1 ms … ~33 s: a page answers in milliseconds, a claim long-polls for up
/// to 30 s.
fn latency_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// 1 ms … ~65 s: a report of a few runs builds in milliseconds, one of a
/// long history or a thousand metrics in seconds.
fn build_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

impl Default for Telemetry {
    fn default() -> Self {
        Telemetry {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_buckets as HistogramOf),
            report_builds: Counter::default(),
            report_seconds: build_buckets(),
        }
    }
}

impl Telemetry {
    /// Counts one answered HTTP request.
    pub fn request(&self, method: &str, route: &str, status: u16, took: Duration) {
        let labels = RouteLabels {
            method: method.to_string(),
            route: route.to_string(),
        };
        self.latency
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        self.requests
            .get_or_create(&RequestLabels {
                method: labels.method,
                route: labels.route,
                status,
            })
            .inc();
    }

    /// Counts one report built (its statistics run), as opposed to one
    /// read back from the database.
    pub fn report_built(&self, took: Duration) {
        self.report_builds.inc();
        self.report_seconds.observe(took.as_secs_f64());
    }

    /// How many reports this server has built.
    pub fn report_builds(&self) -> u64 {
        self.report_builds.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_of_one_route_share_a_series_whatever_was_asked() {
        let t = Telemetry::default();
        t.request("GET", "/comparisons/{id}", 200, Duration::from_millis(3));
        t.request("GET", "/comparisons/{id}", 200, Duration::from_millis(5));
        t.request("GET", "/comparisons/{id}", 404, Duration::from_millis(1));
        let labels = |status| RequestLabels {
            method: "GET".into(),
            route: "/comparisons/{id}".into(),
            status,
        };
        assert_eq!(t.requests.get(&labels(200)).map(|c| c.get()), Some(2));
        assert_eq!(t.requests.get(&labels(404)).map(|c| c.get()), Some(1));
        let route = RouteLabels {
            method: "GET".into(),
            route: "/comparisons/{id}".into(),
        };
        assert!(t.latency.get(&route).is_some());
    }
}
