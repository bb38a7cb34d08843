// Package storeconf is the store conformance suite: every component's
// schema and the store's guarantees, run against each backend
// (coordinator/store/storetest: SQLite always, PostgreSQL when reachable,
// required in CI).
package storeconf
