//! `patchperf-runner track`: adds a tracked tree through the server's
//! `POST /api/v1/trees` and says where it stands.

use patchperf_common::api::{TreeCreateRequest, TreeCreated};

use super::measure::setup;
use crate::Error;
use crate::agent::client::Client;
use crate::cli::track::TrackArgs;

/// Runs `patchperf-runner track`.
pub fn run(args: TrackArgs) -> Result<(), Error> {
    let body = request_body(&args)?;
    let client = Client::new(&args.server, &args.token);
    let created: TreeCreated =
        client
            .post_json("/api/v1/trees", &body)?
            .ok_or_else(|| Error::Server {
                status: 204,
                message: "the server answered without the tree".into(),
            })?;
    let t = &created.tree;
    // A server without --public-url answers relative links.
    let page = if t.page_url.starts_with('/') {
        format!("{}{}", client.base(), t.page_url)
    } else {
        t.page_url.clone()
    };
    println!(
        "tree {} ({}) follows {} {} from {}",
        t.id, t.name, t.url, t.branch, t.tested_commit
    );
    println!("page: {page}");
    Ok(())
}

/// The tree the command line asks for.
fn request_body(args: &TrackArgs) -> Result<TreeCreateRequest, Error> {
    let m = &args.measure;
    Ok(TreeCreateRequest {
        name: args.name.clone(),
        url: args.git.clone(),
        branch: args.branch.clone(),
        // A length left out is fixed by the server when the tree is added:
        // the named mode's, else the named machine's, else a wall-clock one.
        setup: setup(m)?,
        min_hours: args.min_hours,
        cc: args.cc.clone(),
        webhook_url: args.webhook.clone(),
    })
}
