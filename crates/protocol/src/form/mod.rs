//! MCP elicitation: a server asks the person to fill in a form (a message and a flat JSON
//! Schema of primitive fields), or to open a URL, and gets back MCP's `ElicitResult`.
//!
//! - [`request`]: the ask's `message`, `mode`, `url`, `server`..., validated ([`Form`]).
//! - [`request_schema`]: the request as a JSON Schema, what `askgate schema` prints.
//! - [`schema`]: the `requestedSchema`, read into the fields a page shows; any keyword MCP
//!   does not define is refused with its path, as MCP clients must.
//! - [`fields`]: what a field is ([`Field`]), and the checks every property reader shares.
//! - `scalars`, `choices`: the readers of fields of one value (text, numbers, booleans), and
//!   of those that offer options.
//! - [`content`]: an accepted form's content, checked against its fields.
//! - `formats`: e-mail addresses, URIs, dates and times, as the MCP SDK's pydantic types take
//!   them.
//! - `face`: forms behind the dialects' common face ([`FormFace`]).
//!
//! # Decisions
//! - A timeout and a withdrawal both reach the server as `cancel` ("dismissed without a
//!   choice"), a decline as `decline`; neither carries content.
//! - Content is held to JSON's types (a number is not a string of digits), which is stricter
//!   than the Python SDK's pydantic models in their lax mode, and never looser.

mod choices;
pub mod content;
mod face;
pub mod fields;
mod formats;
pub mod request;
pub mod request_schema;
mod scalars;
pub mod schema;

pub use content::check_content;
pub use face::FormFace;
pub use fields::{Choice, Field, FieldKind};
pub use request::{Form, Mode, UrlRules};

/// Longest message, in characters.
pub const MAX_MESSAGE_CHARS: usize = 10_000;
/// Longest server name, in characters.
pub const MAX_SERVER_CHARS: usize = 200;
/// Longest URL of URL mode, in bytes.
pub const MAX_URL_BYTES: usize = 2_048;
/// Most fields in one form.
pub const MAX_FIELDS: usize = 100;
/// Most choices one field offers.
pub const MAX_CHOICES: usize = 100;
/// Longest field name, title, description or choice, in characters.
pub const MAX_TEXT_CHARS: usize = 10_000;
