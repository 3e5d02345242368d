//! A key of an object, as the reader hands it to serde.

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, Deserializer, Unexpected, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::Error;

/// An object's key, which a map with keys of another type than strings reads as one (a
/// number, a boolean, an enum's unit variant), as `serde_json` does.
pub(super) struct Key<'de>(pub(super) &'de str);

/// `deserialize_*` methods of a key read as a number: it must be one in JSON's own syntax,
/// and nothing more, as `serde_json` reads such keys.
macro_rules! numeric_key {
    ($($method:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                let number = self.0.starts_with(|c: char| c.is_ascii_digit() || c == '-')
                    && !self.0.ends_with(|c: char| c.is_ascii_whitespace());
                if !number {
                    return Err(de::Error::invalid_type(Unexpected::Str(self.0), &visitor));
                }
                let mut text = serde_json::Deserializer::from_str(self.0);
                let read = text.$method(visitor)?;
                text.end()?;
                Ok(read)
            }
        )*
    };
}

impl<'de> Deserializer<'de> for Key<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_borrowed_str(self.0)
    }

    numeric_key! {
        deserialize_i8, deserialize_i16, deserialize_i32, deserialize_i64, deserialize_i128,
        deserialize_u8, deserialize_u16, deserialize_u32, deserialize_u64, deserialize_u128,
        deserialize_f32, deserialize_f64,
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            "true" => visitor.visit_bool(true),
            "false" => visitor.visit_bool(false),
            _ => Err(de::Error::invalid_type(Unexpected::Str(self.0), &visitor)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_enum(BorrowedStrDeserializer::new(self.0))
    }

    forward_to_deserialize_any! {
        char str string bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}
