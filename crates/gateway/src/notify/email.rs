//! Mail: one message per person per request (and per reminder), with links that answer as
//! that person.
//!
//! Not written yet: a notify file's `[email]` is read, and mail notifications are routed and
//! kept, but every try fails until this module sends them.

use super::SendError;
use super::settings::EmailSettings;
use crate::keys::ViewerKeys;
use crate::store::StoredDelivery;

/// How mail is sent: the server and the sender.
#[derive(Debug)]
pub struct Mailer {
    settings: EmailSettings,
}

impl Mailer {
    /// A mailer for `settings`.
    ///
    /// # Errors
    /// The server's URL or the sender cannot be used.
    pub fn new(settings: &EmailSettings) -> Result<Mailer, String> {
        Ok(Mailer {
            settings: settings.clone(),
        })
    }
}

/// Sends `delivery` to `person` at `address`.
///
/// # Errors
/// Always, for now.
pub async fn send(
    mailer: &Mailer,
    _keys: &ViewerKeys,
    delivery: &StoredDelivery,
    person: &str,
    address: &str,
) -> Result<(), SendError> {
    let _ = (&mailer.settings, delivery);
    Err(SendError::Failed(format!(
        "mail to {person} <{address}> is not sent yet by this askgate"
    )))
}
