// Package filedrop is the bank file-drop interface (issue 7, item 1): banks
// that never call an API drop a Zengin (全銀協) 120-byte file into their
// inbound folder and get a Zengin result file back in their outbound folder.
//
// Folders (per bank, configurable; default <data>/banks/<bank_id>/):
// inbound (the bank drops files here), processing (a claimed file while it
// is hashed, validated and applied), processed (applied files and
// duplicates), error (refused files, each with an error report beside it)
// and outbound (result files).
//
// A file is picked up only when it is complete: it has a done-marker
// (NAME.done), or its size and mtime stayed the same for Config.StableFor
// (read from the injected clock). It is then moved into processing by an
// atomic rename; a name the drop cannot process (longer than MaxNameLen,
// control characters) is moved to error/ under a safe name with a report
// instead. Bank ids are 3 digits and BankDir is the only mapping from a
// bank id to its folder. Each bank's Zengin name character set (Bank.Names,
// ｰ refused by default) is used to validate its files and write its
// results. Exactly once: a file whose SHA-256 was already applied is
// recorded as DUPLICATE in the FileDrops ledger and not applied. The WHOLE
// file is validated (formats/zengin plus the file-drop rules: the header's
// 仕向銀行番号 is the dropping bank, each 被仕向銀行番号 is a participant,
// no 口座振替) before anything is applied; a file with any error moves to
// error/ with a report listing every error (record, line, byte offset,
// field, reason) and nothing from it is applied. Each data record of a good
// file becomes a BULK PaymentInitiated whose txid and idempotency key are
// derived from the file hash and the record number; the records are
// submitted in chunks, each chunk and its checkpoint in one commit
// (orchestrator.SubmitBulk), so a crash halfway and a restart neither
// duplicate nor lose a record. Once every transfer of the
// file is decided, a result file (口座振替 result layout, one 振替結果コード
// per record) is written to outbound by temp name and rename.
//
// The Processor does one pass (PollOnce); the Watcher repeats it. The
// package talks to the coordinator only through the Coordinator interface
// (SubmitBulk and Query, satisfied by *orchestrator.Orchestrator) and a
// participant lookup; its only tables are FileDrops and FileDropRefusals. It
// must not write any other coordinator table, and imports coordinator and
// formats packages only (never adapter, jobs or outbox).
package filedrop
