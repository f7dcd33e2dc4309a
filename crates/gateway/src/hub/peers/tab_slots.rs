//! The tabs watching one session, by connection id.
//!
//! A short list rather than a map: most sessions have one to a few tabs, and a map's smallest
//! table keeps room for four entries and their control bytes in every session. Lookups by id
//! walk the list; they come with a tab's own frames and its leaving, never per request, while
//! fan-out walks every tab anyway.

use askgate_protocol::TabId;

use super::super::refusals::Tallies;
use super::links::Link;
use crate::people::Person;

/// A tab watching the session.
#[derive(Debug)]
pub(in crate::hub) struct TabSlot {
    pub(in crate::hub) tab: TabId,
    pub(in crate::hub) link: Link,
    /// Who the tab's person is.
    pub(in crate::hub) person: Person,
    /// Refusals it keeps getting, counted.
    pub(in crate::hub) refusals: Tallies,
}

/// Every tab of a session, in no particular order.
#[derive(Debug, Default)]
pub(in crate::hub) struct TabSlots {
    slots: Vec<(u64, TabSlot)>,
}

impl TabSlots {
    /// Adds the tab of connection `link_id` (ids are unique: the hub hands them out).
    pub(in crate::hub) fn insert(&mut self, link_id: u64, slot: TabSlot) {
        if self.slots.capacity() == 0 {
            // Room for one: a session's first tab is often its only one.
            self.slots.reserve_exact(1);
        }
        self.slots.push((link_id, slot));
    }

    /// Removes the tab of connection `link_id`.
    pub(in crate::hub) fn remove(&mut self, link_id: u64) -> Option<TabSlot> {
        let at = self.slots.iter().position(|(id, _)| *id == link_id)?;
        let (_, slot) = self.slots.swap_remove(at);
        if self.slots.is_empty() {
            self.slots = Vec::new();
        }
        Some(slot)
    }

    /// The tab of connection `link_id`.
    pub(in crate::hub) fn get(&self, link_id: u64) -> Option<&TabSlot> {
        self.slots
            .iter()
            .find(|(id, _)| *id == link_id)
            .map(|(_, slot)| slot)
    }

    /// Each tab with its connection id.
    pub(in crate::hub) fn iter(&self) -> impl Iterator<Item = (u64, &TabSlot)> {
        self.slots.iter().map(|(id, slot)| (*id, slot))
    }

    /// The tab of connection `link_id`, to change.
    pub(in crate::hub) fn get_mut(&mut self, link_id: u64) -> Option<&mut TabSlot> {
        self.slots
            .iter_mut()
            .find(|(id, _)| *id == link_id)
            .map(|(_, slot)| slot)
    }

    /// Each tab, to change.
    pub(in crate::hub) fn values_mut(&mut self) -> impl Iterator<Item = &mut TabSlot> {
        self.slots.iter_mut().map(|(_, slot)| slot)
    }

    /// Each tab.
    pub(in crate::hub) fn values(&self) -> impl Iterator<Item = &TabSlot> {
        self.slots.iter().map(|(_, slot)| slot)
    }

    pub(in crate::hub) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(in crate::hub) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use askgate_protocol::wire::Via;

    use super::*;

    fn slot(tab: &str) -> TabSlot {
        TabSlot {
            tab: TabId::parse(tab.to_owned()).unwrap(),
            link: Link::new(1).0,
            person: Person::named("ada", Via::Proxy),
            refusals: Tallies::default(),
        }
    }

    fn tabs(slots: &TabSlots) -> Vec<(u64, String)> {
        let mut tabs: Vec<_> = slots
            .iter()
            .map(|(id, slot)| (id, slot.tab.as_str().to_owned()))
            .collect();
        tabs.sort();
        tabs
    }

    #[test]
    fn tabs_are_found_and_removed_by_their_connection_id() {
        let mut slots = TabSlots::default();
        for (id, tab) in [(7, "t-a"), (3, "t-b"), (9, "t-c")] {
            slots.insert(id, slot(tab));
        }
        assert_eq!(slots.get(3).map(|s| s.tab.as_str()), Some("t-b"));
        assert!(slots.get(4).is_none());
        assert_eq!(
            slots.remove(7).map(|s| s.tab),
            TabId::parse("t-a".to_owned()).ok()
        );
        assert!(slots.remove(7).is_none(), "removed once");
        assert_eq!(tabs(&slots), [(3, "t-b".to_owned()), (9, "t-c".to_owned())]);
        assert_eq!(slots.len(), 2);
        slots.remove(3);
        slots.remove(9);
        assert!(slots.is_empty());
        assert_eq!(
            slots.slots.capacity(),
            0,
            "an emptied session keeps no room"
        );
    }
}
