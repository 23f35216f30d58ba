//! What both ends of the daemon's local socket share beyond the wire types (feature `local`):
//! where the socket and the daemon's files are ([`paths`]) and frames read and written over an
//! async stream ([`frames`]). The daemon and its clients take these from here, so neither
//! depends on the other (docs/architecture.md#protocol).

pub mod frames;
pub mod paths;
