//! Refusals a tab's person keeps getting, counted rather than each recorded: a page (or a
//! script) that sends the same forbidden answer over and over writes one entry when first
//! refused, and one more with the count when the request ends or the tab leaves, however
//! many came in between.

use askgate_protocol::RequestId;

/// Most requests a tab keeps counts for; past it, the oldest count is recorded at once to
/// make room. A tab is refused only on open requests, and counts go with their request's end.
pub(super) const REFUSALS_COUNTED_PER_TAB: usize = 64;

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
    /// Counts a refusal of `action` on `id` for `reason`; with it, a count that had to make
    /// room (to be recorded now, when it counted repeats).
    pub(super) fn count(
        &mut self,
        id: &RequestId,
        action: &'static str,
        reason: &'static str,
    ) -> (Counted, Option<Tally>) {
        if let Some(tally) = self
            .tallies
            .iter_mut()
            .find(|tally| tally.id == *id && tally.reason == reason)
        {
            tally.count += 1;
            return (Counted::Repeat, None);
        }
        let evicted = (self.tallies.len() >= REFUSALS_COUNTED_PER_TAB)
            .then(|| self.tallies.remove(0))
            .filter(Tally::repeated);
        self.tallies.push(Tally {
            id: id.clone(),
            reason,
            action,
            count: 1,
        });
        (Counted::First, evicted)
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
            tallies.count(&id("r1"), "answer", "not an answerer").0,
            Counted::First
        );
        for _ in 0..9 {
            assert_eq!(
                tallies.count(&id("r1"), "decline", "not an answerer").0,
                Counted::Repeat
            );
        }
        assert_eq!(
            tallies.count(&id("r2"), "answer", "not an answerer").0,
            Counted::First
        );
        assert_eq!(
            tallies.count(&id("r1"), "answer", "identity required").0,
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
    fn a_tab_counts_for_a_bounded_number_of_requests() {
        let mut tallies = Tallies::default();
        for n in 0..REFUSALS_COUNTED_PER_TAB {
            let request = id(&format!("r{n}"));
            tallies.count(&request, "answer", "not an answerer");
            tallies.count(&request, "answer", "not an answerer");
        }
        let (counted, evicted) = tallies.count(&id("late"), "answer", "not an answerer");
        assert_eq!(counted, Counted::First);
        assert_eq!(evicted.map(|t| (t.id, t.count)), Some((id("r0"), 2)));
        assert_eq!(tallies.take_all().len(), REFUSALS_COUNTED_PER_TAB - 1);
    }
}
