//! The one deserializer every tool's arguments are read with: serde over the arguments'
//! JSON value, as `serde_json` reads a borrowed `Value`, with two differences.
//!
//! - A struct, at any depth, is read only from an object. Serde alone also takes one from an
//!   array, its fields by position (`[2027, 4]` for `{year, month}`); a tool's schema says
//!   `object`, and a model cannot see the order of a struct's fields, so the fast path must
//!   refuse arrays where the schema check would. (What serde buffers before reading it, the
//!   content of untagged and internally tagged enums and of `flatten`, it reads with its own
//!   deserializer, which this one cannot reach.)
//! - A failed read keeps the place it failed at, as a JSON pointer, for the argument error.
//!
//! Arguments that come as text are parsed into a value first, so each arguments type is
//! compiled for this one deserializer and no other: the code `#[tool]` costs per tool.

mod key;

use std::cell::Cell;

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Unexpected,
    VariantAccess, Visitor,
};
use serde_json::{Error, Map, Value};

use self::key::Key;

/// A read serde refused: its error, and where in the arguments it happened (a JSON
/// pointer; empty for the arguments as a whole).
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) pointer: String,
    /// The key refused, when it was a key of the object at `pointer` (not a value) that
    /// serde refused.
    pub(crate) key: Option<String>,
    pub(crate) error: Error,
}

/// `value` read into `A`.
pub(crate) fn read<'de, A: Deserialize<'de>>(value: &'de Value) -> Result<A, Failure> {
    let failed = Failed::default();
    let at = At {
        place: &Place::Root,
        failed: &failed,
    };
    match A::deserialize(Reader { value, at }) {
        Ok(read) => Ok(read),
        Err(error) => Err(failed.failure(error)),
    }
}

/// Where the reader is: the keys and indexes it went through from the arguments' root. Each
/// level lives on the stack of the call reading it.
enum Place<'a> {
    Root,
    Key(&'a Place<'a>, &'a str),
    Index(&'a Place<'a>, usize),
}

impl Place<'_> {
    fn pointer(&self) -> String {
        let mut segments = Vec::new();
        let mut place = self;
        loop {
            match place {
                Place::Root => break,
                Place::Key(up, key) => {
                    segments.push(super::pointer(key));
                    place = up;
                }
                Place::Index(up, index) => {
                    segments.push(format!("/{index}"));
                    place = up;
                }
            }
        }
        segments.iter().rev().map(String::as_str).collect()
    }
}

/// The pointer of the deepest place a read failed at (and the key, when a key was refused):
/// an error passes outward through every place that holds it, and the first to see it is the
/// one it happened in.
#[derive(Default)]
struct Failed(Cell<Option<(String, Option<String>)>>);

impl Failed {
    #[cold]
    fn failure(&self, error: Error) -> Failure {
        let (pointer, key) = self.0.take().unwrap_or_default();
        Failure {
            pointer,
            key,
            error,
        }
    }

    #[cold]
    fn at(&self, place: &Place<'_>, key: Option<&str>) {
        let kept = self.0.take();
        self.0.set(Some(
            kept.unwrap_or_else(|| (place.pointer(), key.map(str::to_owned))),
        ));
    }
}

/// Where a piece of the reader is, and where it says it failed.
#[derive(Clone, Copy)]
struct At<'a> {
    place: &'a Place<'a>,
    failed: &'a Failed,
}

impl At<'_> {
    /// `read`, with this place kept when it failed and no deeper one was.
    fn kept<T>(self, read: Result<T, Error>) -> Result<T, Error> {
        if read.is_err() {
            self.failed.at(self.place, None);
        }
        read
    }

    /// `seed` read from `key`, a key of the object at this place; a key refused (an
    /// argument the tool does not take, an unknown variant, text that is no number) fails
    /// at the object, naming the key.
    fn read_key<'de, K: DeserializeSeed<'de>>(
        self,
        seed: K,
        key: &'de str,
    ) -> Result<K::Value, Error> {
        let read = seed.deserialize(Key(key));
        if read.is_err() {
            self.failed.at(self.place, Some(key));
        }
        read
    }
}

/// The name `serde_json`'s `RawValue` is asked for by.
const RAW_VALUE: &str = "$serde_json::private::RawValue";

/// The deserializer of one JSON value of the arguments.
struct Reader<'a, 'de> {
    value: &'de Value,
    at: At<'a>,
}

impl Reader<'_, '_> {
    fn invalid(&self, expected: &dyn de::Expected) -> Error {
        de::Error::invalid_type(unexpected(self.value), expected)
    }
}

/// How serde's errors name a JSON value.
fn unexpected(value: &Value) -> Unexpected<'_> {
    match value {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                Unexpected::Unsigned(u)
            } else if let Some(i) = n.as_i64() {
                Unexpected::Signed(i)
            } else {
                Unexpected::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}

/// `deserialize_*` methods for numbers: a JSON number, read as `serde_json` reads one.
macro_rules! numbers {
    ($($method:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                match self.value {
                    Value::Number(n) => n.$method(visitor),
                    _ => Err(self.invalid(&visitor)),
                }
            }
        )*
    };
}

impl<'de> Deserializer<'de> for Reader<'_, 'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => n.deserialize_any(visitor),
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => visit_items(items, self.at, visitor),
            Value::Object(map) => visit_entries(map, self.at, visitor),
        }
    }

    numbers! {
        deserialize_i8, deserialize_i16, deserialize_i32, deserialize_i64, deserialize_i128,
        deserialize_u8, deserialize_u16, deserialize_u32, deserialize_u64, deserialize_u128,
        deserialize_f32, deserialize_f64,
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Bool(b) => visitor.visit_bool(*b),
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::String(s) => visitor.visit_borrowed_str(s),
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => visit_items(items, self.at, visitor),
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        // `serde_json`'s `RawValue` (feature `raw_value`) asks for itself by this name, and
        // only `serde_json`'s own reader knows how to give it.
        if name == RAW_VALUE {
            return self.value.deserialize_newtype_struct(name, visitor);
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Array(items) => visit_items(items, self.at, visitor),
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Object(map) => visit_entries(map, self.at, visitor),
            _ => Err(self.invalid(&visitor)),
        }
    }

    /// From an object only, never an array.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.value {
            Value::String(variant) => visitor.visit_enum(BorrowedStrDeserializer::new(variant)),
            Value::Object(map) => {
                let mut entries = map.iter();
                let (Some((name, value)), None) = (entries.next(), entries.next()) else {
                    return Err(de::Error::invalid_value(
                        Unexpected::Map,
                        &"map with a single key",
                    ));
                };
                visitor.visit_enum(Variant {
                    name,
                    value,
                    up: self.at,
                })
            }
            _ => Err(self.invalid(&"string or map")),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }
}

fn visit_items<'de, V: Visitor<'de>>(
    items: &'de [Value],
    at: At<'_>,
    visitor: V,
) -> Result<V::Value, Error> {
    let mut access = Items {
        rest: items.iter(),
        index: 0,
        at,
    };
    let read = visitor.visit_seq(&mut access)?;
    if access.rest.len() == 0 {
        Ok(read)
    } else {
        Err(de::Error::invalid_length(
            items.len(),
            &"fewer elements in array",
        ))
    }
}

fn visit_entries<'de, V: Visitor<'de>>(
    map: &'de Map<String, Value>,
    at: At<'_>,
    visitor: V,
) -> Result<V::Value, Error> {
    let mut access = Entries {
        rest: map.iter(),
        value: None,
        at,
    };
    let read = visitor.visit_map(&mut access)?;
    if access.rest.len() == 0 {
        Ok(read)
    } else {
        Err(de::Error::invalid_length(
            map.len(),
            &"fewer elements in map",
        ))
    }
}

/// The elements of an array.
struct Items<'a, 'de> {
    rest: std::slice::Iter<'de, Value>,
    index: usize,
    at: At<'a>,
}

impl<'de> SeqAccess<'de> for Items<'_, 'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        let Some(value) = self.rest.next() else {
            return Ok(None);
        };
        let place = Place::Index(self.at.place, self.index);
        self.index += 1;
        let at = At {
            place: &place,
            failed: self.at.failed,
        };
        at.kept(seed.deserialize(Reader { value, at })).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.rest.len())
    }
}

/// The entries of an object.
struct Entries<'a, 'de> {
    rest: serde_json::map::Iter<'de>,
    /// The entry whose key was read last, for its value.
    value: Option<(&'de str, &'de Value)>,
    at: At<'a>,
}

impl<'de> MapAccess<'de> for Entries<'_, 'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.rest.next() else {
            return Ok(None);
        };
        self.value = Some((key, value));
        self.at.read_key(seed, key).map(Some)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Error> {
        let Some((key, value)) = self.value.take() else {
            return Err(de::Error::custom("value is missing"));
        };
        let place = Place::Key(self.at.place, key);
        let at = At {
            place: &place,
            failed: self.at.failed,
        };
        at.kept(seed.deserialize(Reader { value, at }))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.rest.len())
    }
}

/// An enum read from an object with one key: the variant's name, and its content.
struct Variant<'a, 'de> {
    name: &'de str,
    value: &'de Value,
    /// Where the object is.
    up: At<'a>,
}

impl<'de> EnumAccess<'de> for Variant<'_, 'de> {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<(T::Value, Self), Error> {
        let variant = self.up.read_key(seed, self.name)?;
        Ok((variant, self))
    }
}

impl<'de> Variant<'_, 'de> {
    /// Reads the variant's content, at the place of its key.
    fn content<T>(
        &self,
        read: impl FnOnce(Reader<'_, 'de>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let place = Place::Key(self.up.place, self.name);
        let at = At {
            place: &place,
            failed: self.up.failed,
        };
        at.kept(read(Reader {
            value: self.value,
            at,
        }))
    }
}

impl<'de> VariantAccess<'de> for Variant<'_, 'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        self.content(|reader| match reader.value {
            Value::Null => Ok(()),
            _ => Err(reader.invalid(&"unit")),
        })
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        self.content(|reader| seed.deserialize(reader))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        self.content(|reader| match reader.value {
            Value::Array(items) if items.is_empty() => visitor.visit_unit(),
            Value::Array(items) => visit_items(items, reader.at, visitor),
            _ => Err(reader.invalid(&"tuple variant")),
        })
    }

    /// From an object only, never an array.
    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.content(|reader| match reader.value {
            Value::Object(map) => visit_entries(map, reader.at, visitor),
            _ => Err(reader.invalid(&"struct variant")),
        })
    }
}

#[cfg(test)]
mod tests;
