//! OpenAPI schemas of the wire types whose serde form a derive cannot see.

use std::borrow::Cow;

use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type};
use utoipa::openapi::{RefOr, schema};
use utoipa::{PartialSchema, ToSchema};

use crate::protocol::NrTask;

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
