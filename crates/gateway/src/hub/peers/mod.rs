//! Who holds the other end: each connection's link and inbox, the tabs of a session, the
//! bytes queued to them, and the frames handed over.

pub(super) mod frame; // JSON encoded once, shared by every queue, cut into fragments on the way out
pub(super) mod inbox; // a connection's queue of frames, its latest presence and its close code
pub(super) mod links; // the hub's link to each inbox, and the handles an attached peer holds
pub(super) mod queued; // the bytes queued to tabs, per tab, session and gateway, within budgets
pub(super) mod tab_slots; // the tabs watching one session, by connection id
pub(super) mod wakes; // waking the tasks a fan-out queued frames for, a few at a time when many
