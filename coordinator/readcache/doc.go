// Package readcache keeps rows that are read on every request and written
// rarely (the ZC signing keys of KeyRegistry, the signature clock skew of
// ParameterLedger) in memory, per coordinator database, exactly: every
// writer of the cached table bumps the database's generation after its
// transaction, which drops what was cached, and a value read before a
// bump is never stored after it.
//
// Exactness needs every writer of the table to run in this process. On
// SQLite that holds (one node per data folder; the operator commands that
// write these tables refuse a folder a node serves). On PostgreSQL other
// nodes write the same tables, so the cache is off there: Get always
// misses.
package readcache
