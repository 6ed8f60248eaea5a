// Package eventlog is gatehost's append-only, hash-chained event log: one JSON
// record per line in a file, each record carrying the SHA-256 of the record
// before it, written with fsync before an append returns.
//
// Only the host appends (see Log.Append); anyone can check a log with Verify,
// which never modifies the file and may run while a writer is active.
//
// # File format
//
// The log at path is a sequence of lines, each the canonical encoding of a
// Record followed by "\n". A line is at most MaxRecordBytes bytes, newline
// excluded. Records are numbered by seq from 1 with no gaps. The first
// record's prev is GenesisPrev (64 zeros) rather than "", so that every prev
// and hash is a 64-character lowercase hex string; every later record's prev
// is the hash of the record before it.
//
// # Canonical encoding and hash
//
// The canonical encoding of a record is a JSON object without insignificant
// whitespace whose members appear in exactly this order:
//
//	seq, time, prev, hash, kind, run_id, pipeline, stage, plugin,
//	module_sha256, config_digest, abi_version, verdict, reason, request_id, data
//
// seq, time, prev, hash, kind, run_id, pipeline and verdict are always
// present; the others are omitted when empty ("" or 0). Values are encoded as:
//
//   - seq and abi_version: decimal integers, no leading zeros or sign for seq.
//   - time: a string in RFC 3339 in UTC with a "Z" suffix and fractional
//     seconds only as needed, trailing zeros removed (Go's time.RFC3339Nano),
//     for example "2025-01-02T03:04:05.06Z".
//   - strings: valid UTF-8, with '"' and '\' escaped by a backslash, bytes
//     below 0x20 escaped as \u00XX with lowercase hex, every other character
//     (including '<', '>', '&', U+2028 and U+2029) written as is.
//   - data: any JSON value, compacted (insignificant whitespace removed,
//     everything else, including key order and string escapes, kept as given).
//
// kind must not be empty. hash is the lowercase hex SHA-256 of the canonical
// encoding with the hash member (`,"hash":"…"`) removed, so the hash input
// starts `{"seq":1,"time":"…","prev":"000…000","kind":`.
//
// Verify requires every line to be byte-for-byte the canonical encoding of
// the record it decodes to. That makes the hashed bytes and the stored bytes
// one and the same, so another implementation can verify a log by
// re-encoding and never has to guess how a line was parsed (duplicate keys,
// alternative escapes, unknown fields are all rejected).
//
// # Head checkpoint
//
// A hash chain alone cannot reveal that its last records were cut off. So
// the log writes <path>.head, holding {"seq":N,"hash":"…"} for the last
// record, by writing a temporary file, fsyncing it, renaming it over the old
// one and fsyncing the directory: after each commit (an append, or a group of
// concurrent appends committed together) by default, or, with
// Options.HeadInterval, in the background at most that long after the first
// commit it does not cover, and when the Log closes. The
// log is always fsynced before the head, so after a crash the log may be
// ahead of its head (that is fine and Open catches the head up) but never
// behind it. A log shorter than its head, or whose record N has a different
// hash, has been truncated or rewritten. A non-empty log without a head is
// refused as well, since deleting the head would otherwise hide a truncation.
// Open writes the head of a new, empty log as seq 0 with hash GenesisPrev.
//
// Verify reads the head before the log, so a concurrent append can only make
// the log longer than the head it read. Every writer replaces the head under
// the lock, after the fsync of its records, so the head only moves forward.
//
// # Torn tail
//
// A crash during an append can leave a partial last line. When the final
// line of the file lacks its newline, or is not syntactically valid JSON,
// it is a torn tail: Verify reports it (Report.TornTail) and checks the
// chain up to the last complete record; Open, or the next commit of a Log
// that is open (see Several writers), truncates it away under the lock,
// fsyncs, logs a warning (see Log.Repaired) and appends a KindRepair record
// saying how many bytes it dropped. Only the final line is treated this way.
// A bad line anywhere else, or a final line that is valid JSON but fails any
// check, is a *ChainError: Open refuses such a log so that a damaged or
// tampered log is never silently appended to. Dropping a torn tail never
// drops a record at or below the head; if it would, the log is refused.
//
// # Several writers
//
// Any number of Logs, in one process or in several processes on one host,
// may append to one file; their records form one chain. Each group commit
// takes an exclusive flock on the log file (the lock is held for that
// commit only, never for the life of a Log) and, under it:
//
//  1. compares the file's size with the size after its last commit; if it
//     grew, reads and verifies the records other writers appended since,
//     learning the chain's current seq and hash (so re-reading costs only
//     what others wrote);
//  2. truncates a torn tail found there (no append is under way while the
//     lock is held, so an incomplete last line was left by a writer that
//     crashed), and writes a KindRepair record first;
//  3. writes its batch, chained after that tail (records are sealed when
//     queued and sealed again only if the tail moved), fsyncs it, and
//     replaces the head, then releases the lock.
//
// Open reads and verifies the log without the lock, as Verify does, and
// takes it only to read what was appended meanwhile, repair a torn tail and
// bring the head up to date. A commit or an Open waits for the lock up to
// Options.LockTimeout; an append that times out writes nothing and fails
// with an error wrapping ErrLocked. Appends of one Log keep their order and
// contiguity; appends of different writers interleave in the order they
// took the lock. Record times are those of the appends, so with several
// writers they need not be monotonic in seq order.
//
// Where flock is unavailable (not Unix) the lock is a no-op, and only one
// writer at a time may append to a file.
//
// # Durability contract
//
// Append acknowledges (returns nil) only after its records are written and
// fsynced, and, unless Options.HeadInterval is set, the head checkpoint is
// durably replaced. An acknowledged record
// survives a process crash and, on a disk that honours fsync, a power loss.
// With group commit, concurrent appends queued while a commit is in flight are
// written together by one write and one fsync; each caller still returns only
// after the group holding its records is durable, and each call's records are
// contiguous. A crash can therefore lose or tear only unacknowledged records.
// Options.NoSync keeps the ordering but drops the fsyncs: records then survive
// a process crash (they are in the page cache) but not a power loss.
//
// With Options.HeadInterval a crash can leave the head behind acknowledged
// records by up to that interval's commits. Those records are as durable as
// any; Open brings the head up to them. What the lag gives up is the head's
// view of them: cutting them off the end before the head moves is not caught
// by the head. Anyone who can do that can also rewrite the log and its head
// consistently, which only an anchor catches (see What this detects).
//
// # Other stores
//
// Seal chains and encodes records exactly as Log.Append does, and
// VerifyLines checks a stream of lines against a Head as Verify checks a
// file, so a log kept elsewhere (the PostgreSQL store of a fleet, see
// store/postgres) holds byte-for-byte the lines a file log would: exported
// as a file beside its head (WriteHead), it verifies with Verify.
//
// # What this detects
//
// Editing, deleting, inserting or reordering records, and truncating the log
// behind its head, are all detected. An attacker who can write the files can,
// however, rewrite the log and its head consistently (recomputing every hash
// from the point of change). Only a hash kept outside the attacker's reach
// catches that: record Log.Last's hash elsewhere (another system, a signed
// receipt) and pass it as VerifyOptions.Anchor, which requires a record with
// that hash to be on the chain.
package eventlog
