//! What tabs are sent besides each request: the snapshot a joining tab gets, the frames an
//! ending makes, the finished list, and the history read from the trail.

pub(super) mod ending_frames; // `outcome` and `resolved`, encoded straight from the resolution
pub(super) mod finished; // a session's recent finished requests, in the order they ended
pub(super) mod history_cache; // a session's `history` frame, built once until a request ends
pub(super) mod snapshot; // a joining tab's `snapshot`, its shared part built once
