//! Refusals a tab's person keeps getting, counted rather than each recorded: a page (or a
//! script) that sends the same forbidden answer over and over writes one entry when first
//! refused, and one more with the count when the request ends or the tab leaves, however
//! many came in between.

use askgate_protocol::RequestId;

/// One kind of refusal a tab got on one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Tally {
    pub(super) id: RequestId,
    /// Why (the audit trail's `reason`).
    pub(super) reason: &'static str,
    /// `answer` or `decline`: what was first refused.
    pub(super) action: &'static str,
    /// How many times in all, the first included.
    pub(super) count: u64,
}

/// What counting a refusal comes to.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Counted {
    /// The first of its kind: record it now.
    First,
    /// A repeat, counted.
    Repeat,
}

/// A tab's counts, oldest first.
#[derive(Debug, Default)]
pub(super) struct Tallies {
    tallies: Vec<Tally>,
}

impl Tallies {
    /// Counts a refusal of `action` on `id` for `reason`; with it, the counts of requests no
    /// longer open (`is_open` says which are), to be recorded now. Only open requests keep a
    /// count, so a tab holds at most its session's open requests times the reasons, and a
    /// count is never dropped to make room (which would let its next refusal be "first"
    /// again). A refusal on a request that ended meanwhile is recorded as first, not kept:
    /// an ended request is not refused for who answers again.
    pub(super) fn count(
        &mut self,
        id: &RequestId,
        action: &'static str,
        reason: &'static str,
        is_open: impl Fn(&RequestId) -> bool,
    ) -> (Counted, Vec<Tally>) {
        if let Some(tally) = self
            .tallies
            .iter_mut()
            .find(|tally| tally.id == *id && tally.reason == reason)
        {
            tally.count += 1;
            return (Counted::Repeat, Vec::new());
        }
        // Requests that ended where their counts were not taken (on another node, or by
        // the deadline or the agent): a new kind is rare, so this costs little.
        let (kept, ended): (Vec<Tally>, Vec<Tally>) = std::mem::take(&mut self.tallies)
            .into_iter()
            .partition(|tally| is_open(&tally.id));
        self.tallies = kept;
        if is_open(id) {
            self.tallies.push(Tally {
                id: id.clone(),
                reason,
                action,
                count: 1,
            });
        }
        (
            Counted::First,
            ended.into_iter().filter(Tally::repeated).collect(),
        )
    }

    /// Takes the counts of request `id` (it ended) that counted repeats.
    pub(super) fn take_request(&mut self, id: &RequestId) -> Vec<Tally> {
        // Most tabs count nothing, and every ending asks each tab of its session.
        if !self.tallies.iter().any(|tally| tally.id == *id) {
            return Vec::new();
        }
        let (ended, kept) = std::mem::take(&mut self.tallies)
            .into_iter()
            .partition(|tally| tally.id == *id);
        self.tallies = kept;
        ended.into_iter().filter(Tally::repeated).collect()
    }

    /// Takes every count that counted repeats (the tab leaves).
    pub(super) fn take_all(&mut self) -> Vec<Tally> {
        std::mem::take(&mut self.tallies)
            .into_iter()
            .filter(Tally::repeated)
            .collect()
    }
}

impl Tally {
    /// Whether it counted more than the first, already recorded.
    fn repeated(&self) -> bool {
        self.count > 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> RequestId {
        RequestId::parse(text).unwrap()
    }

    #[test]
    fn the_first_of_a_kind_is_recorded_and_repeats_counted_until_taken() {
        let mut tallies = Tallies::default();
        assert_eq!(
            tallies
                .count(&id("r1"), "answer", "not an answerer", |_| true)
                .0,
            Counted::First
        );
        for _ in 0..9 {
            assert_eq!(
                tallies
                    .count(&id("r1"), "decline", "not an answerer", |_| true)
                    .0,
                Counted::Repeat
            );
        }
        assert_eq!(
            tallies
                .count(&id("r2"), "answer", "not an answerer", |_| true)
                .0,
            Counted::First
        );
        assert_eq!(
            tallies
                .count(&id("r1"), "answer", "identity required", |_| true)
                .0,
            Counted::First
        );
        let ended = tallies.take_request(&id("r1"));
        assert_eq!(
            ended,
            [Tally {
                id: id("r1"),
                reason: "not an answerer",
                action: "answer",
                count: 10
            }],
            "one count; a kind refused once is recorded already"
        );
        assert!(tallies.take_request(&id("r1")).is_empty());
        assert!(tallies.take_all().is_empty(), "r2 was refused once");
    }

    #[test]
    fn counts_are_kept_for_open_requests_only_and_never_dropped_to_make_room() {
        let mut tallies = Tallies::default();
        let open = |_: &RequestId| true;
        for round in 0..3 {
            for n in 0..300 {
                let (counted, ended) =
                    tallies.count(&id(&format!("r{n}")), "answer", "not an answerer", open);
                assert_eq!(counted == Counted::First, round == 0, "r{n} round {round}");
                assert!(ended.is_empty());
            }
        }
        let (counted, ended) = tallies.count(&id("late"), "answer", "not an answerer", |request| {
            *request == id("late") || *request == id("r7")
        });
        assert_eq!(counted, Counted::First);
        assert_eq!(ended.len(), 299, "the ended requests' counts, recorded");
        assert!(ended.iter().all(|tally| tally.count == 3));
        assert_eq!(tallies.tallies.len(), 2, "r7 and late");
        let (counted, ended) = tallies.count(&id("gone"), "answer", "not an answerer", |_| false);
        assert_eq!(counted, Counted::First);
        assert_eq!(ended.len(), 1, "r7; late was refused once");
        assert!(
            tallies.tallies.is_empty(),
            "an ended request keeps no count"
        );
    }
}
