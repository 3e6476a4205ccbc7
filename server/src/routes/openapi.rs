//! `GET /api/v1/openapi.json`: an OpenAPI 3.1 description of every JSON
//! endpoint. Written by hand next to the routes; the API tests check that
//! every route is described and every described route exists.

use axum::Router;
use axum::routing::get;
use serde_json::{Value, json};

use crate::AppState;
use crate::extract::Json;

/// Routes of this module.
pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/openapi.json", get(|| async { Json(document()) }))
}

fn r(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn body(name: &str) -> Value {
    json!({ "required": true, "content": { "application/json": { "schema": r(name) } } })
}

fn answer(description: &str, schema: Option<&str>) -> Value {
    match schema {
        Some(name) => json!({
            "description": description,
            "content": { "application/json": { "schema": r(name) } }
        }),
        None => json!({ "description": description }),
    }
}

fn errors(codes: &[&str]) -> serde_json::Map<String, Value> {
    codes
        .iter()
        .map(|&c| {
            let text = match c {
                "400" => "The request could not be read (malformed JSON, bad header or parameter).",
                "401" => "Missing, malformed, unknown or revoked token.",
                "403" => "Token of the wrong kind, or machine registered under another token.",
                "404" => "No such thing.",
                "409" => "The caller does not hold the job's lease, or the thing is final.",
                "413" => "Body larger than the server's limit.",
                "422" => "Readable but invalid content; the message names the field.",
                _ => "Error.",
            };
            (c.to_string(), answer(text, Some("ErrorBody")))
        })
        .collect()
}

fn op(
    summary: &str,
    security: Option<&str>,
    request: Option<&str>,
    ok: &[(&str, &str, Option<&str>)],
    errs: &[&str],
) -> Value {
    let mut responses = errors(errs);
    for &(code, text, schema) in ok {
        responses.insert(code.to_string(), answer(text, schema));
    }
    let mut o = json!({ "summary": summary, "responses": responses });
    if let Some(kind) = security {
        o["security"] = json!([{ "bearer": [] }]);
        o["description"] = json!(format!("Requires a {kind} token (or an admin token)."));
    }
    if let Some(req) = request {
        o["requestBody"] = body(req);
    }
    o
}

fn job_op(summary: &str, request: Option<&str>, ok: &[(&str, &str, Option<&str>)]) -> Value {
    let mut o = op(
        summary,
        Some("runner"),
        request,
        ok,
        &["400", "401", "403", "404", "409", "413", "422"],
    );
    o["parameters"] = json!([
        { "name": "id", "in": "path", "required": true, "schema": { "type": "integer" } },
        { "name": "patchperf-machine", "in": "header", "required": true,
          "description": "Id of the machine holding the lease.", "schema": { "type": "integer" } },
        { "name": "patchperf-attempt", "in": "header", "required": true,
          "description": "Attempt (JobSpec.attempt) holding the lease.", "schema": { "type": "integer" } }
    ]);
    o
}

fn id_param() -> Value {
    json!([{ "name": "id", "in": "path", "required": true, "schema": { "type": "integer" } }])
}

/// The document.
pub fn document() -> Value {
    let mut show = op(
        "Status, per-job progress, run counts and the statistical verdict of a comparison",
        None,
        None,
        &[("200", "The comparison.", Some("ComparisonView"))],
        &["400", "404"],
    );
    show["parameters"] = id_param();
    let mut report_txt = op(
        "The 0-day style text report (one table per workload, mode and nr_task)",
        None,
        None,
        &[("200", "text/plain report.", None)],
        &["400", "404"],
    );
    report_txt["parameters"] = id_param();
    let mut cancel = op(
        "Cancel a comparison: queued jobs fail as cancelled, running ones learn it from heartbeats",
        Some("ci"),
        None,
        &[("200", "Cancelled.", Some("CancelResponse"))],
        &["400", "401", "403", "404", "409"],
    );
    cancel["parameters"] = id_param();
    let mut list = op(
        "List comparisons, newest first",
        None,
        None,
        &[("200", "A page of comparisons.", Some("ComparisonList"))],
        &["400"],
    );
    list["parameters"] = json!([
        { "name": "status", "in": "query", "schema": { "type": "string",
          "enum": ["queued", "running", "done", "failed", "cancelled"] } },
        { "name": "machine", "in": "query", "schema": { "type": "string" } },
        { "name": "workload", "in": "query", "schema": { "type": "string" } },
        { "name": "verdict", "in": "query",
          "description": "overall verdict of finished comparisons",
          "schema": { "type": "string", "enum": patchperf_common::comparison::OverallVerdict::ALL } },
        { "name": "limit", "in": "query", "schema": { "type": "integer", "minimum": 1, "maximum": 500, "default": 50 } },
        { "name": "before", "in": "query", "description": "next_before of the previous page",
          "schema": { "type": "integer" } }
    ]);
    let mut revoke = op(
        "Revoke a token",
        Some("admin"),
        None,
        &[("204", "Revoked.", None)],
        &["400", "401", "403", "404"],
    );
    revoke["parameters"] = id_param();

    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "patchperf",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Kernel patch performance comparisons: the CI API and the runner protocol. \
                            Errors are JSON {\"error\": \"…\"}."
        },
        "components": {
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
            "schemas": schemas()
        },
        "paths": {
            "/healthz": { "get": op("200 once the database answers", None, None,
                &[("200", "Healthy.", None), ("503", "Database unreachable.", None)], &[]) },
            "/api/v1/openapi.json": { "get": op("This document", None, None,
                &[("200", "OpenAPI document.", None)], &[]) },
            "/api/v1/runner/register": { "post": op(
                "Create or update this runner's machine (by name)", Some("runner"),
                Some("RegisterRequest"), &[("200", "Registered.", Some("RegisterResponse"))],
                &["400", "401", "403", "413", "422"]) },
            "/api/v1/jobs/claim": { "post": op(
                "Claim the next job (long-poll up to ~30 s); the claim is a lease", Some("runner"),
                Some("ClaimRequest"),
                &[("200", "A job, leased to the machine.", Some("JobSpec")),
                  ("204", "No job within the wait.", None)],
                &["400", "401", "403", "404"]) },
            "/api/v1/jobs/{id}/heartbeat": { "post": job_op(
                "Extend the lease; learn whether the comparison was cancelled", None,
                &[("200", "Lease extended.", Some("HeartbeatResponse"))]) },
            "/api/v1/jobs/{id}/state": { "post": job_op(
                "Report a progress state with a message and the log tail", Some("StateUpdate"),
                &[("204", "Recorded.", None)]) },
            "/api/v1/jobs/{id}/runs": { "post": job_op(
                "Upload one run (idempotent per boot, workload, nr_task, mode)", Some("RunUpload"),
                &[("201", "Stored.", Some("RunUploadResponse")),
                  ("200", "Already stored before; nothing written.", Some("RunUploadResponse"))]) },
            "/api/v1/jobs/{id}/finish": { "post": job_op(
                "Finish the job as done (every boot has every workload) or failed with a reason",
                Some("FinishRequest"), &[("200", "Finished.", Some("FinishResponse"))]) },
            "/api/v1/comparisons": {
                "post": op("Submit a comparison of base and base+patch series", Some("ci"),
                    Some("ComparisonCreateRequest"),
                    &[("201", "Created; jobs queued in interleaved order.", Some("ComparisonCreated"))],
                    &["400", "401", "403", "413", "422"]),
                "get": list
            },
            "/api/v1/comparisons/{id}": { "get": show },
            "/api/v1/comparisons/{id}/report.txt": { "get": report_txt },
            "/api/v1/comparisons/{id}/cancel": { "post": cancel },
            "/api/v1/machines": { "get": op("Registered machines and their inventory", None, None,
                &[("200", "Machines by name.", Some("MachineList"))], &[]) },
            "/api/v1/tokens": {
                "get": op("List tokens (never their text)", Some("admin"), None,
                    &[("200", "Tokens.", Some("TokenList"))], &["401", "403"]),
                "post": op("Create a token; its text is shown only in this answer", Some("admin"),
                    Some("TokenCreateRequest"), &[("201", "Created.", Some("TokenCreated"))],
                    &["400", "401", "403", "422"])
            },
            "/api/v1/tokens/{id}/revoke": { "post": revoke }
        }
    })
}

fn schemas() -> Value {
    let string = json!({ "type": "string" });
    let int = json!({ "type": "integer" });
    let boolean = json!({ "type": "boolean" });
    let side = json!({ "type": "string", "enum": ["base", "patched"] });
    let mode = json!({ "type": "string", "enum": ["host", "kvm", "tcg", "tcg-icount", "kexec"] });
    let reasons: Vec<&str> = patchperf_common::protocol::FailureReason::ALL
        .iter()
        .map(|r| r.code())
        .collect();
    json!({
        "ErrorBody": { "type": "object", "required": ["error"],
            "properties": { "error": string } },
        "MachineInventory": { "type": "object",
            "required": ["hostname", "cpu_model", "nr_cpu", "memory_bytes", "kernel_release",
                         "arch", "kvm_usable", "pmu_usable", "backends"],
            "properties": { "hostname": string, "cpu_model": string, "nr_cpu": int,
                "memory_bytes": int, "kernel_release": string, "arch": string,
                "kvm_usable": boolean, "pmu_usable": boolean,
                "backends": { "type": "array", "items": mode },
                "notes": { "type": "array", "items": string } } },
        "RegisterRequest": { "type": "object", "required": ["name", "inventory"],
            "properties": { "name": string, "inventory": r("MachineInventory") } },
        "RegisterResponse": { "type": "object", "required": ["machine_id"],
            "properties": { "machine_id": int } },
        "ClaimRequest": { "type": "object", "required": ["machine_id", "wait_seconds"],
            "properties": { "machine_id": int, "wait_seconds": int } },
        "BaseSource": { "oneOf": [
            { "type": "object", "required": ["kind", "url", "commit"], "properties": {
                "kind": { "const": "git" }, "url": string, "commit": string } },
            { "type": "object", "required": ["kind", "name"], "properties": {
                "kind": { "const": "tarball" }, "name": string } } ] },
        "NrTask": { "oneOf": [ { "type": "integer", "minimum": 1 },
                               { "type": "string", "pattern": "^[0-9]+%$" } ] },
        "WorkloadParams": { "type": "object",
            "required": ["nr_task", "seconds", "warmup_seconds"],
            "properties": { "mode": { "type": "string", "enum": ["process", "thread"] },
                "nr_task": { "type": "array", "items": r("NrTask") },
                "seconds": int, "warmup_seconds": int,
                "perf_stat": boolean, "perf_profile": boolean } },
        "BootSlot": { "type": "object", "required": ["seq", "side"],
            "properties": { "seq": int, "side": side } },
        "JobSpec": { "type": "object",
            "required": ["job_id", "comparison_id", "attempt", "lease_seconds", "base", "mbox",
                         "patches_sha256", "workloads", "params", "boots"],
            "properties": { "job_id": int, "comparison_id": int, "attempt": int,
                "lease_seconds": int, "base": r("BaseSource"), "mbox": string,
                "aa": { "type": "boolean",
                        "description": "A/A job: the patched boots boot the base kernel" },
                "patches_sha256": string, "config_fragment": string,
                "workloads": { "type": "array", "items": string },
                "params": r("WorkloadParams"), "backend": mode,
                "boots": { "type": "array", "items": r("BootSlot") } } },
        "HeartbeatResponse": { "type": "object", "required": ["lease_seconds"],
            "properties": { "lease_seconds": int, "cancelled": boolean } },
        "StateUpdate": { "type": "object", "required": ["state"],
            "properties": { "state": { "type": "string", "enum":
                ["fetching", "applying", "building", "booting", "running", "uploading"] },
                "message": string, "log_tail": string } },
        "RunUpload": { "type": "object", "required": ["boot", "result"],
            "properties": { "boot": r("BootSlot"), "result": {
                "type": "object",
                "description": "patchperf-common's RunResult: workload, mode, nr_task, \
                                warmup_seconds, seconds, measurement, kernel, samples, metrics \
                                [{name, value}], series [{name, interval_seconds, points}], \
                                unsupported, profile_event, warnings",
                "required": ["workload", "mode", "nr_task", "warmup_seconds", "seconds",
                             "measurement", "samples", "metrics"] } } },
        "RunUploadResponse": { "type": "object", "required": ["run_id", "stored"],
            "properties": { "run_id": int, "stored": boolean } },
        "FinishRequest": { "oneOf": [
            { "type": "object", "required": ["outcome"], "properties": {
                "outcome": { "const": "done" }, "log_tail": string } },
            { "type": "object", "required": ["outcome", "reason", "detail"], "properties": {
                "outcome": { "const": "failed" },
                "reason": { "type": "string", "enum": reasons },
                "detail": string, "log_tail": string } } ] },
        "FinishResponse": { "type": "object", "required": ["state", "comparison_status"],
            "properties": { "state": string, "comparison_status": string } },
        "ComparisonCreateRequest": { "type": "object",
            "required": ["base", "workloads", "params", "runs"],
            "properties": { "base": r("BaseSource"),
                "mbox": { "type": "string",
                          "description": "the patch series (required unless aa)" },
                "aa": { "type": "boolean",
                        "description": "A/A comparison: both sides boot the base kernel; \
                                        its spread becomes the machine's noise floor" },
                "workloads": { "type": "array", "items": { "type": "string", "enum":
                    patchperf_common::workload::WORKLOADS.iter().map(|w| w.name).collect::<Vec<_>>() } },
                "params": r("WorkloadParams"),
                "runs": { "type": "integer", "minimum": 3, "maximum": 100,
                          "description": "boots per side" },
                "max_runs": { "type": "integer", "minimum": 3, "maximum": 100,
                              "description": "while a headline verdict is undecided when \
                                              every job is done, double the boots per side \
                                              up to this many" },
                "backend": mode, "config_fragment": string,
                "machine": { "type": "string", "description": "pin to this machine" },
                "order_seed": { "type": "integer", "description": "seed of the boot order" } } },
        "ComparisonCreated": { "type": "object", "required": ["id", "url", "report_url"],
            "properties": { "id": int, "url": string, "report_url": string } },
        "ComparisonView": { "type": "object",
            "description": "Status, the submitted parameters, boot_order in A/B notation, \
                            jobs [{id, seq, state, attempt, max_attempts, message, boots, failure, \
                            log_tail, runs, lease_expires_at, updated_at}], runs {base, patched, \
                            expected_per_side} and verdict {overall (regression, improvement, \
                            no change, undecided, no results), headlines, text_url, reports: one \
                            per (workload, mode, nr_task) with header, base_runs, patched_runs, \
                            policy and metrics [{name, direction, unit, base and patched {presence, \
                            values, mean, stddev, stddev_percent}, change, interval, welch {p, df, \
                            t}, mann_whitney {p, u}, q, zero_day, verdict, reason}]}.",
            "required": ["id", "status", "report_url", "base", "patches", "workloads", "params",
                         "runs_per_side", "boot_order", "jobs", "runs", "verdict"] },
        "ComparisonList": { "type": "object", "required": ["comparisons"],
            "description": "Each comparison: id, status, base, subject, workloads, runs_per_side, \
                            machine, created_at, and once it is final its overall verdict and \
                            headline (null while it runs: its own GET has the live verdict).",
            "properties": { "comparisons": { "type": "array", "items": { "type": "object" } },
                "next_before": int } },
        "CancelResponse": { "type": "object", "required": ["id", "status"],
            "properties": { "id": int, "status": string } },
        "MachineList": { "type": "object", "required": ["machines"],
            "properties": { "machines": { "type": "array", "items": { "type": "object" } } } },
        "TokenList": { "type": "object", "required": ["tokens"],
            "properties": { "tokens": { "type": "array", "items": { "type": "object" } } } },
        "TokenCreateRequest": { "type": "object", "required": ["kind", "name"],
            "properties": { "kind": { "type": "string", "enum": ["runner", "ci", "admin"] },
                            "name": string } },
        "TokenCreated": { "type": "object", "required": ["id", "kind", "name", "token"],
            "properties": { "id": int, "kind": string, "name": string, "token": string } }
    })
}
