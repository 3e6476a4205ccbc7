//! `GET /api/v1/openapi.json`: the OpenAPI 3.1 document of every JSON
//! endpoint, generated from the handlers' `#[utoipa::path]` attributes and
//! the wire types' schemas. Routes enter the document in the same call
//! that routes them ([`super::api`]), so the two cannot drift apart.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use axum::http::header;
use axum::response::IntoResponse;
use patchperf_common::comparison::OverallVerdict;
use patchperf_common::protocol::ErrorBody;
use utoipa::openapi::content::Content;
use utoipa::openapi::response::Response;
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{IntoResponses, Modify, OpenApi, PartialSchema, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::domain::report::verdict::VerdictView;

/// Routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(document))
}

/// What the document says before the routes add their paths and schemas.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "patchperf",
        description = "Kernel patch performance comparisons: the CI API and the runner protocol. \
                       Errors are JSON {\"error\": \"…\"}. Calls marked with the bearer scheme \
                       take `Authorization: Bearer <token>`; each says which kind of token \
                       (runner, ci or admin) it needs. Reads are public unless the server \
                       runs with `--private`: then every GET but /healthz needs a token of \
                       any kind and answers 401 without one."
    ),
    components(schemas(ErrorBody)),
    modifiers(&BearerTokens)
)]
#[derive(Debug)]
pub struct ApiDoc;

/// Declares the `bearer` scheme that authenticated operations name.
struct BearerTokens;

impl Modify for BearerTokens {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        openapi
            .components
            .get_or_insert_with(Default::default)
            .add_security_scheme(
                "bearer",
                SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
            );
    }
}

/// The errors a job-scoped runner call (heartbeat, state, runs, finish)
/// can answer, each with an [`ErrorBody`].
#[derive(Debug)]
pub struct JobCallErrors;

impl IntoResponses for JobCallErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        [
            (400, "The body, a header or the id could not be read."),
            (401, "No usable token."),
            (
                403,
                "Not a runner or admin token, or the machine is registered under another token.",
            ),
            (404, "No such job, or the machine is not registered."),
            (
                409,
                "The machine does not hold this attempt's lease, the job is final, or (runs) \
                 its comparison was cancelled.",
            ),
            (413, "Body larger than the server's limit."),
            (422, "Invalid content; the message names the field."),
        ]
        .into_iter()
        .map(|(status, description)| {
            let body = Content::new(Some(Ref::from_schema_name(ErrorBody::name())));
            let response = Response::builder()
                .description(description)
                .content("application/json", body)
                .build();
            (status.to_string(), response.into())
        })
        .collect()
    }
}

/// The document, built once from the routes on first use.
static DOCUMENT: LazyLock<String> = LazyLock::new(|| {
    super::api()
        .into_openapi()
        .to_json()
        .expect("the OpenAPI document is plain data and always serializes")
});

/// Writes each schema the derive composed of flattened parts (`allOf` of
/// references and objects: a request with its `Setup`) as the one object
/// its JSON is, with every property at the top and no other, so a reader
/// of the document sees the request as it is sent.
pub fn inline_flattened(openapi: &mut utoipa::openapi::OpenApi) {
    let Some(components) = openapi.components.as_mut() else {
        return;
    };
    let Ok(mut schemas) = serde_json::to_value(&components.schemas) else {
        return;
    };
    if let Some(map) = schemas.as_object_mut() {
        merge_all_of(map);
    }
    // Read back as it was written; a schema utoipa cannot read back
    // leaves the document as the derive made it.
    if let Ok(merged) = serde_json::from_value(schemas) {
        components.schemas = merged;
    }
}

fn merge_all_of(schemas: &mut serde_json::Map<String, serde_json::Value>) {
    use serde_json::{Map, Value};
    let composed: Vec<String> = schemas
        .iter()
        .filter(|(_, s)| s.get("allOf").is_some())
        .map(|(name, _)| name.clone())
        .collect();
    for name in composed {
        let parts = schemas[&name]["allOf"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut properties = Map::new();
        let mut required = Vec::new();
        let mut whole = true;
        for part in &parts {
            let object = match part.get("$ref").and_then(Value::as_str) {
                Some(to) => to
                    .strip_prefix("#/components/schemas/")
                    .and_then(|n| schemas.get(n))
                    .cloned()
                    .unwrap_or(Value::Null),
                None => part.clone(),
            };
            match (object.get("properties"), object.get("allOf")) {
                (Some(Value::Object(p)), None) => {
                    properties.extend(p.clone());
                    if let Some(Value::Array(r)) = object.get("required") {
                        required.extend(r.iter().cloned());
                    }
                }
                _ => whole = false,
            }
        }
        if !whole {
            continue;
        }
        let mut object = Map::new();
        object.insert("type".into(), "object".into());
        // The struct's own words, wherever the derive put them.
        let described = std::iter::once(&schemas[&name])
            .chain(parts.iter().filter(|p| p.get("$ref").is_none()))
            .find_map(|p| p.get("description"));
        if let Some(d) = described {
            object.insert("description".into(), d.clone());
        }
        object.insert("properties".into(), Value::Object(properties));
        object.insert("required".into(), Value::Array(required));
        object.insert("additionalProperties".into(), false.into());
        schemas.insert(name, Value::Object(object));
    }
}

/// This document.
#[utoipa::path(
    get,
    path = "/api/v1/openapi.json",
    responses((status = 200, description = "OpenAPI document.", content_type = "application/json"))
)]
async fn document() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        DOCUMENT.as_str(),
    )
}

/// The verdict's schema, written here because its type lives in the report
/// layer, which knows nothing of OpenAPI.
impl PartialSchema for VerdictView {
    fn schema() -> RefOr<Schema> {
        let string = || ObjectBuilder::new().schema_type(SchemaType::new(Type::String));
        ObjectBuilder::new()
            .property(
                "overall",
                string()
                    .enum_values(Some(OverallVerdict::ALL.iter().map(|v| v.as_str())))
                    .description(Some("The worst headline verdict of the reports.")),
            )
            .property(
                "headlines",
                ArrayBuilder::new()
                    .items(string())
                    .description(Some("The headline sentence of each report.")),
            )
            .property(
                "text_url",
                string().description(Some("The plain-text report.")),
            )
            .property(
                "reports",
                ArrayBuilder::new()
                    .items(ObjectBuilder::new())
                    .description(Some(
                        "One report per (workload, mode, nr_task) with header, base_runs, \
                         patched_runs, policy, explanation (why its headline metric moved, in \
                         a sentence; absent when it did not) and metrics [{name, direction, \
                         unit, base and \
                         patched {presence, values, mean, stddev, stddev_percent}, change, \
                         interval, welch {p, df, t}, mann_whitney {p, u}, q, zero_day, \
                         verdict, reason, real_below_delta (present and true for a no change \
                         that is significant but smaller than δ)}].",
                    )),
            )
            .required("overall")
            .required("headlines")
            .required("text_url")
            .required("reports")
            .into()
    }
}

impl ToSchema for VerdictView {
    // Registers the schema under its name, as derived schemas do, so the
    // comparison view's reference to it resolves.
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((Self::name().into_owned(), Self::schema()));
    }
}
