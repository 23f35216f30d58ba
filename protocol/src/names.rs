//! Field-less enums with fixed names: shown to users, typed by them, parsed back.

/// An error for text that names no known value of an enum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} `{given}`; expected one of: {expected}")]
pub struct ParseNameError {
    pub(crate) kind: &'static str,
    pub(crate) given: String,
    pub(crate) expected: &'static str,
}

/// Implements `as_str`, `Display` and `FromStr` for a field-less enum with fixed names.
macro_rules! named_enum {
    ($ty:ident, $kind:literal, { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The name users type and see.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $ty {
            type Err = $crate::names::ParseNameError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok($ty::$variant),)+
                    _ => Err($crate::names::ParseNameError {
                        kind: $kind,
                        given: s.to_string(),
                        expected: concat!($($name, " "),+),
                    }),
                }
            }
        }
    };
}
