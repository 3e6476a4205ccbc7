//! The HTML pages people read: the dashboard of open change points, recent
//! comparisons and bisections, every change point and every bisection on
//! pages of their own, the tracked trees with their histories, the
//! report page of one comparison (live while its jobs run), the page of one
//! bisection, the mailing lists followed with their series, machine pages
//! and job logs, plus the CSS and
//! JS they load. Templates live in the workspace's `templates/` (askama,
//! HTML-escaped by default); every number comes from the report builder,
//! formatted as the text report formats it.

use axum::Router;
use axum::routing::{get, post};

use crate::AppState;

mod assets;
mod bisection;
mod bisections;
mod changes;
mod comparison;
mod dashboard;
mod error_page;
mod job_log;
mod lists;
mod machine;
mod metrics;
mod plot;
mod profile;
mod series;
mod steps;
mod tree;
pub mod view;

/// Routes of this module; reads need a token when `state` says so.
pub fn router(state: &AppState) -> Router<AppState> {
    Router::new()
        .route("/", get(dashboard::page))
        .route("/comparisons/{id}", get(comparison::page))
        .route("/bisections", get(bisections::list))
        .route("/bisections/{id}", get(bisection::page))
        .route("/comparisons/{id}/plots/runs.svg", get(plot::runs))
        .route("/comparisons/{id}/plots/series.svg", get(plot::series))
        .route("/comparisons/{id}/series.mbox", get(series::mbox))
        .route("/comparisons/{id}/metrics", get(metrics::page))
        .route("/comparisons/{id}/metrics.csv", get(metrics::csv))
        .route("/comparisons/{id}/profile", get(profile::page))
        .route("/trees", get(tree::list))
        .route("/trees/{id}", get(tree::page))
        .route("/trees/{id}/plots/history.svg", get(tree::history_svg))
        .route("/changes", get(changes::list))
        .route("/changes/{id}/acknowledge", post(changes::acknowledge))
        .route("/lists", get(lists::list))
        .route("/lists/{id}", get(lists::page))
        .route("/series/{id}", get(lists::series))
        .route("/machines", get(machine::list))
        .route("/machines/{name}", get(machine::page))
        .route("/jobs/{id}/log", get(job_log::page))
        .route("/jobs/{id}/log.txt", get(job_log::raw))
        .route("/static/{file}", get(assets::file))
        .route("/favicon.ico", get(assets::favicon))
        // Inside the error page, so that a 401 is answered as a page.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            super::read_access::require_token,
        ))
        .layer(axum::middleware::from_fn(error_page::html_errors))
}
