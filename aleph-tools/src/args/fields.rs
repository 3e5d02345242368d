//! The `Deserialize` and `JsonSchema` of an arguments struct `#[tool]` writes, as one generic
//! reader and one schema builder over the tuple of its field types.
//!
//! serde's and schemars' derives write a field enum, a visitor and their impls into every
//! tool; here a tool's impls are one call each, and the code behind them is compiled once
//! for each tuple of field types. They read and describe the struct as the derives do, for
//! the fields `#[tool]` writes: plain names, doc comments, `#[arg(default)]`. A field with
//! a `#[serde]` or `#[schemars]` attribute of its own keeps the derives.

use std::fmt;
use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{
    self, Deserialize, DeserializeOwned, Deserializer, IgnoredAny, MapAccess, SeqAccess,
    Unexpected, Visitor,
};
use serde::forward_to_deserialize_any;
use serde_json::{Map, Value};

/// An arguments struct as `#[tool]` writes it: what its impls need beyond the field types.
pub struct ArgsStruct {
    /// The struct's name.
    pub name: &'static str,
    /// The fields' names, in the order of the tuple of their types.
    pub fields: &'static [&'static str],
    /// `#[tool(strict)]`: a key that names no field is refused, and the schema says so.
    pub strict: bool,
}

/// A parameter's type, checked where the parameter is written: `#[tool]` names one for each
/// field, so a type that cannot be an argument is reported at the parameter rather than at
/// the attribute.
pub struct Argument<T: DeserializeOwned + JsonSchema>(PhantomData<T>);

/// The field types of an arguments struct, as a tuple: reads each from a map or a sequence
/// and fills in what is missing.
pub trait FieldValues<'de>: Sized {
    /// One `Option` for each field: what has been read so far.
    type Slots;
    /// One `Option<fn() -> T>` for each field: the defaults of the fields that have one.
    type Defaults;

    /// A slot for each field, all empty.
    fn empty() -> Self::Slots;

    /// Reads the fields from `map`, each key read with `key`; a key that names no field is
    /// skipped.
    ///
    /// # Errors
    ///
    /// A field given twice, a key or value the deserializer refuses.
    fn read_entries<A: MapAccess<'de>, F: FieldIndex>(
        map: A,
        key: FieldKey<F>,
        args: &'static ArgsStruct,
    ) -> Result<Self::Slots, A::Error>;

    /// Reads the fields in order from `seq`. A field after its end is left empty when it
    /// has a default.
    ///
    /// # Errors
    ///
    /// A field after the end that has no default, a value the deserializer refuses.
    fn read_elements<A: SeqAccess<'de>>(
        seq: &mut A,
        defaults: &Self::Defaults,
        args: &'static ArgsStruct,
    ) -> Result<Self::Slots, A::Error>;

    /// The values: each one read, or its default, or what its type makes of a missing field
    /// (`None` for an `Option`).
    ///
    /// # Errors
    ///
    /// A missing field without a default whose type needs a value.
    fn finish<E: de::Error>(
        slots: Self::Slots,
        defaults: Self::Defaults,
        args: &'static ArgsStruct,
    ) -> Result<Self, E>;
}

/// The field types of an arguments struct, as a tuple: the schema of each, and whether its
/// type accepts a missing field.
pub trait FieldSchemas {
    /// Each field's schema and whether it may be left out, in order.
    fn property_schemas(generator: &mut SchemaGenerator) -> Vec<(Schema, bool)>;
}

/// Finds the field a key names: `#[tool]` writes one for each struct, a `match` over the
/// names, which the compiler makes faster than any search of a list.
pub trait FieldIndex: Fn(&str) -> Option<usize> + Copy {}

impl<F: Fn(&str) -> Option<usize> + Copy> FieldIndex for F {}

/// `Deserialize::deserialize` of an arguments struct: its fields' values, in order.
/// `index` finds the field a key names.
///
/// # Errors
///
/// What serde's derive refuses: a value of the wrong type, a field missing or given twice,
/// an unknown key in a strict struct.
#[inline]
pub fn read_args<'de, D, V, F>(
    deserializer: D,
    args: &'static ArgsStruct,
    index: F,
    defaults: V::Defaults,
) -> Result<V, D::Error>
where
    D: Deserializer<'de>,
    V: FieldValues<'de>,
    F: FieldIndex,
{
    let visitor = ArgsVisitor::<V, F> {
        args,
        index,
        defaults,
    };
    deserializer.deserialize_struct(args.name, args.fields, visitor)
}

/// Reads the fields and fills in the missing ones inside the deserializer's call, so an
/// error about a missing field carries its position, as the derive's does.
struct ArgsVisitor<'de, V: FieldValues<'de>, F> {
    args: &'static ArgsStruct,
    index: F,
    defaults: V::Defaults,
}

impl<'de, V: FieldValues<'de>, F: FieldIndex> Visitor<'de> for ArgsVisitor<'de, V, F> {
    type Value = V;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "struct {}", self.args.name)
    }

    #[inline]
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V, A::Error> {
        let key = FieldKey {
            names: self.args.fields,
            index: self.index,
            strict: self.args.strict,
        };
        let slots = V::read_entries(map, key, self.args)?;
        V::finish(slots, self.defaults, self.args)
    }

    #[inline]
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<V, A::Error> {
        let slots = V::read_elements(&mut seq, &self.defaults, self.args)?;
        V::finish(slots, self.defaults, self.args)
    }
}

/// Reads a key as the index of the field it names; `None` for a key that names none, unless
/// the struct is strict.
#[derive(Clone, Copy)]
pub struct FieldKey<F> {
    names: &'static [&'static str],
    index: F,
    strict: bool,
}

impl<F: FieldIndex> FieldKey<F> {
    #[inline]
    fn find<E: de::Error>(self, key: &str) -> Result<Option<usize>, E> {
        match (self.index)(key) {
            Some(index) => Ok(Some(index)),
            None if self.strict => Err(E::unknown_field(key, self.names)),
            None => Ok(None),
        }
    }
}

impl<'de, F: FieldIndex> de::DeserializeSeed<'de> for FieldKey<F> {
    type Value = Option<usize>;

    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<F: FieldIndex> Visitor<'_> for FieldKey<F> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("field identifier")
    }

    fn visit_u64<E: de::Error>(self, index: u64) -> Result<Self::Value, E> {
        match usize::try_from(index) {
            Ok(index) if index < self.names.len() => Ok(Some(index)),
            _ if self.strict => Err(E::invalid_value(
                Unexpected::Unsigned(index),
                &format!("field index 0 <= i < {}", self.names.len()).as_str(),
            )),
            _ => Ok(None),
        }
    }

    #[inline]
    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        self.find(key)
    }

    fn visit_bytes<E: de::Error>(self, key: &[u8]) -> Result<Self::Value, E> {
        match std::str::from_utf8(key) {
            Ok(key) => self.find(key),
            Err(_) if self.strict => {
                Err(E::unknown_field(&String::from_utf8_lossy(key), self.names))
            }
            Err(_) => Ok(None),
        }
    }
}

/// The error of a sequence that ends before field `index`, which has no default, in the
/// derive's words.
#[cold]
fn too_short<E: de::Error>(index: usize, args: &'static ArgsStruct) -> E {
    let count = args.fields.len();
    let plural = if count == 1 { "" } else { "s" };
    E::invalid_length(
        index,
        &format!("struct {} with {count} element{plural}", args.name).as_str(),
    )
}

/// A field's value: the one read, its default, or what its type makes of its absence.
#[inline]
fn finish_value<'de, T: Deserialize<'de>, E: de::Error>(
    slot: Option<T>,
    default: Option<fn() -> T>,
    name: &'static str,
) -> Result<T, E> {
    match (slot, default) {
        (Some(value), _) => Ok(value),
        (None, Some(default)) => Ok(default()),
        (None, None) => T::deserialize(Missing(name, PhantomData)),
    }
}

/// What a missing field reads as: `None` to an `Option`, an error naming the field to
/// anything else, as serde's derive has it.
struct Missing<E>(&'static str, PhantomData<E>);

impl<'de, E: de::Error> Deserializer<'de> for Missing<E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, E> {
        Err(E::missing_field(self.0))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_none()
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// Whether `T` reads a missing field as a value (an `Option` does): then the field is not
/// required in the schema.
fn accepts_missing<T: DeserializeOwned>() -> bool {
    T::deserialize(Missing::<de::value::Error>("", PhantomData)).is_ok()
}

/// The schema of one field's type, and whether the field may be left out for its type.
fn property_schema<T: JsonSchema + DeserializeOwned>(
    generator: &mut SchemaGenerator,
) -> (Schema, bool) {
    (generator.subschema_for::<T>(), accepts_missing::<T>())
}

/// A field's default, as the schema tells it.
pub enum FieldDefault {
    /// The field has no default.
    None,
    /// The field has a default (so it may be left out), as JSON when its type serializes.
    Given(Option<Value>),
}

/// `JsonSchema::json_schema` of an arguments struct: an object with a property for each
/// field, in order, and `required` listing those that may not be left out.
///
/// `docs` holds each field's doc comment as schemars reads one, `(title, description)`, and
/// `doc` the struct's. `defaults` has an entry for each field.
pub fn args_schema<V: FieldSchemas>(
    generator: &mut SchemaGenerator,
    args: &'static ArgsStruct,
    docs: &[(&str, &str)],
    doc: (&str, &str),
    defaults: &[FieldDefault],
) -> Schema {
    let deserializing = generator.contract().is_deserialize();
    let schemas = V::property_schemas(generator);
    object_schema(schemas, deserializing, args, docs, doc, defaults)
}

/// The object schema of [`args_schema`], from its fields' schemas: not generic, so it is
/// compiled once, not for every tool.
fn object_schema(
    schemas: Vec<(Schema, bool)>,
    deserializing: bool,
    args: &'static ArgsStruct,
    docs: &[(&str, &str)],
    doc: (&str, &str),
    defaults: &[FieldDefault],
) -> Schema {
    let mut root = Map::new();
    root.insert("type".into(), "object".into());
    if args.strict {
        root.insert("additionalProperties".into(), false.into());
    }
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (index, (mut schema, accepts_missing)) in schemas.into_iter().enumerate() {
        let Some(name) = args.fields.get(index).copied() else {
            break;
        };
        let (title, description) = docs.get(index).copied().unwrap_or_default();
        insert_nonempty(&mut schema, "title", title);
        insert_nonempty(&mut schema, "description", description);
        let default = defaults.get(index).unwrap_or(&FieldDefault::None);
        if let FieldDefault::Given(Some(json)) = default {
            schema.insert("default".into(), json.clone());
        }
        properties.insert(name.into(), schema.into());
        let defaulted = matches!(default, FieldDefault::Given(_));
        if !(deserializing && (defaulted || accepts_missing)) {
            required.push(Value::from(name));
        }
    }
    if !args.fields.is_empty() {
        root.insert("properties".into(), properties.into());
    }
    if !required.is_empty() {
        root.insert("required".into(), required.into());
    }
    let mut schema = Schema::from(root);
    insert_nonempty(&mut schema, "title", doc.0);
    insert_nonempty(&mut schema, "description", doc.1);
    schema
}

fn insert_nonempty(schema: &mut Schema, key: &str, text: &str) {
    if !text.is_empty() {
        schema.insert(key.into(), text.into());
    }
}

/// A field's default as JSON, when its type serializes: picked through auto-ref over
/// [`DefaultNotShown`].
pub struct DefaultProbe<T>(pub T);

/// See [`DefaultProbe`].
pub trait DefaultShown {
    /// The default as JSON.
    fn default_json(&self) -> Option<Value>;
}

impl<T: serde::Serialize> DefaultShown for DefaultProbe<T> {
    fn default_json(&self) -> Option<Value> {
        serde_json::to_value(&self.0).ok()
    }
}

/// See [`DefaultProbe`]: a default whose type does not serialize is not shown.
pub trait DefaultNotShown {
    /// Nothing.
    fn default_json(&self) -> Option<Value>;
}

impl<T> DefaultNotShown for &DefaultProbe<T> {
    fn default_json(&self) -> Option<Value> {
        None
    }
}

/// `FieldValues` and `FieldSchemas` for the tuples of one to sixteen types, and the empty
/// tuple.
macro_rules! tuples {
    ($( ($($index:tt $ty:ident),*) )*) => {$(
        impl<'de, $($ty: Deserialize<'de>),*> FieldValues<'de> for ($($ty,)*) {
            type Slots = ($(Option<$ty>,)*);
            type Defaults = ($(Option<fn() -> $ty>,)*);

            #[allow(clippy::unused_unit)]
            #[inline]
            fn empty() -> Self::Slots {
                ($(None::<$ty>,)*)
            }

            #[allow(unused_variables, unused_mut)]
            #[inline]
            fn read_entries<Access: MapAccess<'de>, F: FieldIndex>(
                mut map: Access,
                key: FieldKey<F>,
                args: &'static ArgsStruct,
            ) -> Result<Self::Slots, Access::Error> {
                let mut slots = Self::empty();
                while let Some(found) = map.next_key_seed(key)? {
                    match found {
                        $(Some($index) => {
                            if slots.$index.is_some() {
                                return Err(de::Error::duplicate_field(args.fields[$index]));
                            }
                            slots.$index = Some(map.next_value()?);
                        })*
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(slots)
            }

            #[allow(unused_variables, unused_mut)]
            fn read_elements<Access: SeqAccess<'de>>(
                seq: &mut Access,
                defaults: &Self::Defaults,
                args: &'static ArgsStruct,
            ) -> Result<Self::Slots, Access::Error> {
                let mut slots = Self::empty();
                let mut ended = false;
                $(
                    if !ended {
                        slots.$index = seq.next_element()?;
                        ended = slots.$index.is_none();
                    }
                    if ended && defaults.$index.is_none() {
                        return Err(too_short($index, args));
                    }
                )*
                Ok(slots)
            }

            #[allow(unused_variables, clippy::unused_unit)]
            #[inline]
            fn finish<E: de::Error>(
                slots: Self::Slots,
                defaults: Self::Defaults,
                args: &'static ArgsStruct,
            ) -> Result<Self, E> {
                Ok(($(
                    finish_value(slots.$index, defaults.$index, args.fields[$index])?,
                )*))
            }
        }

        impl<$($ty: JsonSchema + DeserializeOwned),*> FieldSchemas for ($($ty,)*) {
            #[allow(unused_variables)]
            fn property_schemas(generator: &mut SchemaGenerator) -> Vec<(Schema, bool)> {
                vec![$(property_schema::<$ty>(generator)),*]
            }
        }
    )*};
}

tuples! {
    ()
    (0 T0)
    (0 T0, 1 T1)
    (0 T0, 1 T1, 2 T2)
    (0 T0, 1 T1, 2 T2, 3 T3)
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4)
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5)
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6)
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7)
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8)
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9)
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10)
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11)
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12)
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13)
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14)
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15)
}
