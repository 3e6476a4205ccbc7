//! With the `sqlx` feature (the server's): the state and side enums of this
//! crate are stored as their text spelling, and decode from it. One macro
//! so that every such column is read and written the same way, for any
//! database whose text type `&str` maps to; no I/O happens here.

/// Implements `sqlx::Type`, `Encode` and `Decode` for an enum stored as
/// text, given its spelling (`fn(Self) -> &'static str`) and the inverse
/// (`fn(&str) -> Option<Self>`). A stored spelling the enum does not know
/// is a decode error naming the value.
macro_rules! text_column {
    ($ty:ident, $spell:ident, $parse:ident) => {
        impl<DB: sqlx::Database> sqlx::Type<DB> for $ty
        where
            str: sqlx::Type<DB>,
        {
            fn type_info() -> DB::TypeInfo {
                <str as sqlx::Type<DB>>::type_info()
            }

            fn compatible(ty: &DB::TypeInfo) -> bool {
                <str as sqlx::Type<DB>>::compatible(ty)
            }
        }

        impl<'q, DB: sqlx::Database> sqlx::Encode<'q, DB> for $ty
        where
            &'q str: sqlx::Encode<'q, DB>,
        {
            fn encode_by_ref(
                &self,
                buf: &mut <DB as sqlx::Database>::ArgumentBuffer<'q>,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <&'q str as sqlx::Encode<'q, DB>>::encode_by_ref(&$ty::$spell(*self), buf)
            }
        }

        impl<'r, DB: sqlx::Database> sqlx::Decode<'r, DB> for $ty
        where
            &'r str: sqlx::Decode<'r, DB>,
        {
            fn decode(
                value: <DB as sqlx::Database>::ValueRef<'r>,
            ) -> Result<Self, sqlx::error::BoxDynError> {
                let text = <&'r str as sqlx::Decode<'r, DB>>::decode(value)?;
                $ty::$parse(text)
                    .ok_or_else(|| format!("{text:?} is not a {}", stringify!($ty)).into())
            }
        }
    };
}
