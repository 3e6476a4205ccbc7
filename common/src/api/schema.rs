//! OpenAPI schemas a derive cannot write: of wire types whose serde form
//! it cannot see, and of fields whose allowed values come from a table.

use std::borrow::Cow;

use utoipa::openapi::schema::{
    ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::{RefOr, schema};
use utoipa::{PartialSchema, ToSchema};

use crate::protocol::NrTask;
use crate::workload::WORKLOADS;

/// A task count, or a share of online CPUs written `"50%"`.
impl PartialSchema for NrTask {
    fn schema() -> RefOr<Schema> {
        let count = ObjectBuilder::new()
            .schema_type(SchemaType::new(Type::Integer))
            .minimum(Some(1));
        let percent = ObjectBuilder::new()
            .schema_type(SchemaType::new(Type::String))
            .pattern(Some("^[0-9]+%$"));
        schema::Schema::OneOf(OneOfBuilder::new().item(count).item(percent).build()).into()
    }
}

impl ToSchema for NrTask {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("NrTask")
    }
}

/// Workload names, each one of the catalogue's.
pub(super) fn workload_names() -> ArrayBuilder {
    let name = ObjectBuilder::new()
        .schema_type(SchemaType::new(Type::String))
        .enum_values(Some(WORKLOADS.iter().map(|w| w.name)));
    ArrayBuilder::new()
        .items(name)
        .description(Some("Workload names from the catalogue."))
}
