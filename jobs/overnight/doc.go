// Package overnight is the overnight file exchange with a batch-window
// bank's core: BULK and DEFERRED postings the adapter queued in its outbox
// with route FILE (outbox.RouteFILE) are cut into
// an overnight posting file (formats/overnight), delivered to the core's
// inbound folder under a temporary name and then renamed, processed by the
// core in its batch window, and answered with a result file that is
// ingested to confirm (APPLIED) or block (BLOCKED, with a Case) each posting.
//
// Exactly once, surviving a crash at any point:
//   - cut: one transaction moves the fileable PENDING FILE outbox rows into
//     the file (outbox.TakeForFile: IN_FILE, detail number fixed) and
//     records the file; a restart finds
//     the unfinished file and continues it instead of cutting another;
//   - deliver: the file's bytes are a pure function of the recorded file
//     and its postings, so a restart rewrites the same bytes; the final
//     name appears only by rename (after fsync), and a file already
//     delivered or already answered is not written again; the core's own
//     batch control (bank, business date, file sequence) is the second
//     guard;
//   - ingest: the result file is checked whole first (format, header,
//     every detail echoes its posting) and then applied in one transaction
//     (read by streaming and settled 4,096 postings at a time with
//     outbox.SettleFromFileAll: IN_FILE -> APPLIED or BLOCKED)
//     together with its record keyed by name and by SHA-256 of its
//     content: the same file again (under any name) changes nothing, and
//     a different content under a name already ingested is refused;
//   - Cases for BLOCKED postings are opened after the commit by the
//     outbox's OpenMissingCases (claimed case token, DedupKey
//     "OUTBOX-BLOCKED:<ref>", detection path OVERNIGHT_RESULT), and
//     re-opened by the next run if a crash intervened.
//
// The postings are the adapter's outbox rows (one ledger: the shadow
// balance counts a posting once it is APPLIED, whichever route it took).
// The outbox never sends a FILE posting over MQ nor inquires about it, so a
// posting waiting in an unprocessed file cannot be resent. It imports
// formats/overnight, outbox, coordinator/{store,clock,domainerr} and
// jobs/scheduler. It must not import adapter/coresim (the simulated core's
// folder pickup is in jobs/overnight/corepickup) and writes the outbox's
// table only through outbox.TakeForFile and outbox.SettleFromFileAll.
package overnight
