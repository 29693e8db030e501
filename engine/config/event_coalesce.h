// Event coalescing for display: a run's events as entries, where an event the trainer repeats on
// every step (an overflow in the same layer's same tensor, a loss-scale backoff) merges with its
// repeats on consecutive steps into one entry: "Overflow on every step from 412 to 511 (100 steps):
// fc1's weight gradient held inf/NaN; the steps were skipped." The store keeps every event (it is
// the record, and export and `show --json` list them all); only the faces that show events to a
// person use this, the CLI's `show` and the GUI's Events panel alike, so both show the same lines.
//
// The rule (docs/gui.md, docs/schema.md and `mantissa-cli show --help` say it for users):
//   - Mergeable events and their key: overflow (data's layer, tensor and skipped must all match)
//     and scale_change (data's reason must match: a backoff every step while gradients stay
//     non-finite, or growth every step with growth_interval 1). Nothing else repeats per step:
//     notices and divergence are told once, evaluations carry different results.
//   - An event extends the entry of its key when its step is exactly that entry's last step + 1.
//     The same step again, or a gap, starts a new entry.
//   - Between the repeats, other mergeable events may interleave (an overflow and its backoff come
//     at each step, so both entries grow side by side), and so may events that report on the run
//     without changing it: evaluation, checkpoint, divergence. Any other event (a setting change,
//     pause, resume, notice, the run's start or end) closes every entry: what follows starts anew,
//     so a change a person made stands between the overflows before it and those after it.
//   - Entries keep the order of their first events, so their first steps never decrease when the
//     events' steps do not.
//
// Cost: add() is O(1) amortised (the entries that may still grow are at most a handful: one per
// key seen on the latest two steps), so a live view can feed 100k repeats without slowing.
// Not thread-safe: one owner (the GUI thread's model, or the CLI).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config/telemetry.h"

namespace mantissa {

// The merge key of an event: equal keys may merge; empty for an event that never merges (any
// other kind, or an overflow/scale change whose data lacks the fields the key needs).
std::string event_repeat_key(const Event& event);

// Whether an event of this kind may sit between two repeats without closing their entry.
bool event_may_interleave(EventKind kind);

// One displayed line: a single event, or `count` repeats on steps first_step..last_step.
struct EventEntry {
    std::size_t first = 0;         // index, in the sequence fed, of the entry's first event
    std::size_t last = 0;          // index of its last event (== first for a single event)
    std::int64_t first_step = 0;
    std::int64_t last_step = 0;
    std::int64_t count = 1;        // events merged; last_step - first_step + 1 (one per step)
    bool merged() const { return count > 1; }
};

class EventCoalescer {
public:
    struct Added {
        std::size_t entry = 0;  // the entry the event went to
        bool appended = false;  // true: a new entry (the last one); false: an existing one grew
    };
    // Feeds the next event, in the order recorded; its index is the number of events fed before.
    Added add(const Event& event);
    void clear();

    const std::vector<EventEntry>& entries() const { return m_entries; }
    std::size_t events_fed() const { return m_fed; }
    // Whether a later event could still extend this entry: it is open and the latest step fed is
    // at most its last step + 1. Its text then says "so far". A single event is never growing in
    // its text (entry_message shows it as recorded), but it may still become a merged entry.
    bool growing(std::size_t entry) const;
    // The entries that may still grow (a handful at most), for views that must redraw them.
    std::vector<std::size_t> open_entries() const;

private:
    struct Open {
        std::string key;
        std::size_t entry = 0;
    };
    void prune();
    std::vector<EventEntry> m_entries;
    std::vector<Open> m_open;  // by key; each entry's last_step + 1 >= m_latest_step
    std::size_t m_fed = 0;
    std::int64_t m_latest_step = 0;
    bool m_any = false;
};

// The entry's text for a person: a single event's own message; for merged repeats, one sentence
// with the step range and count, e.g. "Overflow on every step from 412 to 511 (100 steps): fc1's
// weight gradient held inf/NaN; the steps were skipped." With growing, the count reads
// "(37 steps so far)". first and last are the entry's first and last events.
std::string event_entry_message(const EventEntry& entry, const Event& first, const Event& last, bool growing);

}  // namespace mantissa
