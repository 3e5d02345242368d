//! Deserializing with structs read only from JSON objects.
//!
//! A serde-derived struct also accepts a JSON array, its fields taken by position
//! (`[2027, 4, 1]` for `{year, month, day}`). A tool's schema says `object`, and a model
//! cannot see the order of a struct's fields, so the server's fast path must refuse arrays
//! where the schema wants an object, as the schema check does. [`ObjectsOnly`] wraps a
//! deserializer and, at every depth, asks for a map wherever a struct is asked for (so an
//! array is an error) and refuses an array for a struct variant.

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// A deserializer whose structs, at any depth, come only from maps.
pub(crate) struct ObjectsOnly<D>(pub(crate) D);

/// Forwards `deserialize_*` methods, wrapping the visitor.
macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
                self.0.$method($($arg,)* Wrap(visitor))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for ObjectsOnly<D> {
    type Error = D::Error;

    forward! {
        deserialize_any(), deserialize_bool(), deserialize_i8(), deserialize_i16(),
        deserialize_i32(), deserialize_i64(), deserialize_i128(), deserialize_u8(),
        deserialize_u16(), deserialize_u32(), deserialize_u64(), deserialize_u128(),
        deserialize_f32(), deserialize_f64(), deserialize_char(), deserialize_str(),
        deserialize_string(), deserialize_bytes(), deserialize_byte_buf(),
        deserialize_option(), deserialize_unit(), deserialize_seq(), deserialize_map(),
        deserialize_identifier(), deserialize_ignored_any(),
        deserialize_unit_struct(name: &'static str),
        deserialize_newtype_struct(name: &'static str),
        deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(Wrap(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// A visitor whose nested deserializers are wrapped too.
struct Wrap<V>(V);

/// Forwards `visit_*` methods that take a plain value.
macro_rules! forward_visit {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(
            fn $method<E: de::Error>(self, value: $ty) -> Result<V::Value, E> {
                self.0.$method(value)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    forward_visit! {
        visit_bool(bool), visit_i8(i8), visit_i16(i16), visit_i32(i32), visit_i64(i64),
        visit_i128(i128), visit_u8(u8), visit_u16(u16), visit_u32(u32), visit_u64(u64),
        visit_u128(u128), visit_f32(f32), visit_f64(f64), visit_char(char), visit_str(&str),
        visit_borrowed_str(&'de str), visit_string(String), visit_bytes(&[u8]),
        visit_borrowed_bytes(&'de [u8]), visit_byte_buf(Vec<u8>),
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.0.visit_some(ObjectsOnly(deserializer))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<V::Value, D::Error> {
        self.0.visit_newtype_struct(ObjectsOnly(deserializer))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(Wrap(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(Wrap(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.0.visit_enum(Wrap(data))
    }
}

/// A seed whose deserializer is wrapped.
struct Seed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(ObjectsOnly(deserializer))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Seed(seed))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Wrap<A> {
    type Error = A::Error;
    type Variant = Wrap<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        self.0
            .variant_seed(Seed(seed))
            .map(|(value, variant)| (value, Wrap(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Wrap(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, MapsOnly(visitor))
    }
}

/// A struct variant's visitor: a map, never a sequence.
struct MapsOnly<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for MapsOnly<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(Wrap(map))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::ObjectsOnly;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Date {
        year: u16,
        month: u8,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    enum Event {
        Meeting { on: Date },
        Trip(Vec<Date>),
        Holiday(Option<Date>),
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Plan {
        start: Date,
        events: Vec<Event>,
        pair: (u8, u8),
    }

    fn from_value(value: &serde_json::Value) -> Result<Plan, serde_json::Error> {
        Plan::deserialize(ObjectsOnly(value))
    }

    fn from_text(text: &str) -> Result<Plan, serde_json::Error> {
        Plan::deserialize(ObjectsOnly(&mut serde_json::Deserializer::from_str(text)))
    }

    #[test]
    fn objects_pass_at_every_depth() {
        let plan = json!({
            "start": { "year": 2027, "month": 4 },
            "events": [
                { "Meeting": { "on": { "year": 2027, "month": 5 } } },
                { "Trip": [{ "year": 2027, "month": 6 }] },
                { "Holiday": { "year": 2027, "month": 7 } },
                { "Holiday": null },
            ],
            "pair": [1, 2],
        });
        let parsed = from_value(&plan).unwrap();
        assert_eq!(parsed, from_text(&plan.to_string()).unwrap());
        assert_eq!(parsed.events.len(), 4);
        assert_eq!(parsed.pair, (1, 2));
    }

    #[test]
    fn arrays_for_structs_are_refused_at_every_depth() {
        let bad = [
            json!({ "start": [2027, 4], "events": [], "pair": [1, 2] }),
            json!({ "start": { "year": 2027, "month": 4 }, "events": [{ "Meeting": [[2027, 5]] }], "pair": [1, 2] }),
            json!({ "start": { "year": 2027, "month": 4 }, "events": [{ "Meeting": { "on": [2027, 5] } }], "pair": [1, 2] }),
            json!({ "start": { "year": 2027, "month": 4 }, "events": [{ "Trip": [[2027, 6]] }], "pair": [1, 2] }),
            json!({ "start": { "year": 2027, "month": 4 }, "events": [{ "Holiday": [2027, 7] }], "pair": [1, 2] }),
        ];
        // Plain serde takes a struct from an array, by position.
        assert!(Plan::deserialize(&bad[0]).is_ok());
        for value in bad {
            assert!(from_value(&value).is_err(), "{value}");
            assert!(from_text(&value.to_string()).is_err(), "{value}");
        }
    }
}
